// Package pg_test runs gpuacct serve as real processes on a PostgreSQL
// ledger: two of them, one writer, the writer killed, the other taking
// over (docs/postgresql.md, "one writer with takeover"); and a read-only
// serve on the harness's streaming standby answering throughout.
package pg_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// proc is one gpuacct serve process and what it has logged.
type proc struct {
	cmd  *exec.Cmd
	addr chan string
	mu   sync.Mutex
	log  []byte
}

func (p *proc) logged() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.log)
}

var addrRE = regexp.MustCompile(`listening for /metrics.*addr=(\S+)`)

// start runs bin serve on cfg with args (--read-only); its stderr is
// kept and the address it listens on is sent on addr.
func start(t *testing.T, bin, cfg string, args ...string) *proc {
	t.Helper()
	p := &proc{addr: make(chan string, 1)}
	p.cmd = exec.Command(bin, append([]string{"--config", cfg, "serve"}, args...)...)
	p.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "WATCHDOG_USEC=")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log = append(p.log, line+"\n"...)
			p.mu.Unlock()
			if m := addrRE.FindStringSubmatch(line); m != nil {
				select {
				case p.addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	return p
}

func (p *proc) address(t *testing.T) string {
	t.Helper()
	select {
	case a := <-p.addr:
		return a
	case <-time.After(90 * time.Second):
		t.Fatalf("serve did not listen in 90s; log:\n%s", p.logged())
		return ""
	}
}

var sampleRE = regexp.MustCompile(`(?m)^(\S+) (\S+)$`)

// metrics is the process's /metrics as name → value (unlabelled ones).
func metrics(addr string) map[string]string {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	out := map[string]string{}
	for _, m := range sampleRE.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// waitFor polls cond until it holds or the (generous) deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, 120*time.Second, 50*time.Millisecond, cond)
}

// config writes a serve config on the ledger at url with directories of
// its own under dir (a head server's view: the same ledger, the same
// incoming).
func config(t *testing.T, dir, incoming, url string) string {
	t.Helper()
	for _, d := range []string{"quarantine", "archive", "live"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "gpusuite.toml")
	body := fmt.Sprintf(`[store]
url = %q
path = %q

[ingest]
incoming = %q
quarantine = %q
archive = %q
interval = "200ms"
watch = false
sacct = ""
metrics_listen = "127.0.0.1:0"

[board]
live_dir = %q
`, url, filepath.Join(dir, "unused.db"), incoming, filepath.Join(dir, "quarantine"), filepath.Join(dir, "archive"), filepath.Join(dir, "live"))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPostgresServeTakeover: of two serve processes on one PostgreSQL
// ledger only the first writes (passes) while the second waits and says
// so; SIGKILL the first, and the second takes over and passes.
func TestPostgresServeTakeover(t *testing.T) {
	url := ledgerdb.NewPostgresDB(t)
	bin := slurm.Binary(t, "gpuacct")
	root := t.TempDir()
	incoming := filepath.Join(root, "incoming")
	if err := os.Mkdir(incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	a := start(t, bin, config(t, filepath.Join(root, "a"), incoming, url))
	aAddr := a.address(t)
	waitFor(t, "a pass of the first serve", func() bool {
		m := metrics(aAddr)
		return m["gpuacct_store_writer_waiting"] == "0" && m["gpuacct_ingest_last_success_timestamp_seconds"] != "" && m["gpuacct_ingest_last_success_timestamp_seconds"] != "0"
	})
	b := start(t, bin, config(t, filepath.Join(root, "b"), incoming, url))
	bAddr := b.address(t)
	waitFor(t, "the second serve waiting", func() bool { return metrics(bAddr)["gpuacct_store_writer_waiting"] == "1" })
	// Passes of the first go on; the second has run none.
	before := metrics(aAddr)[`gpuacct_ingest_passes_total{result="ok"}`]
	waitFor(t, "another pass of the first serve", func() bool {
		return metrics(aAddr)[`gpuacct_ingest_passes_total{result="ok"}`] != before
	})
	if v, ok := metrics(bAddr)[`gpuacct_ingest_passes_total{result="ok"}`]; ok {
		t.Fatalf("the waiting serve ran passes (%s); only one may write", v)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	waitFor(t, "the second serve writing after the first was killed", func() bool {
		if ctx.Err() != nil {
			return false
		}
		m := metrics(bAddr)
		v := m["gpuacct_ingest_last_success_timestamp_seconds"]
		return m["gpuacct_store_writer_waiting"] == "0" && v != "" && v != "0"
	})
	if !regexp.MustCompile(`another writer holds the ledger: .*gpuacct pid \d+ on `).MatchString(b.logged()) {
		t.Errorf("the second serve's log does not name the holder:\n%s", b.logged())
	}
}
