package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/reportcmd"
	"github.com/aicloud/gpusuite/gpuacct/servecmd"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// fixture is a simulated cluster's records, written for the real ingest:
// gendata's jobs (known ground truth) plus one job still running.
type fixture struct {
	// db is the ledger's location: the SQLite file, or on PostgreSQL
	// (ledgerdb.NewLedger) the database's URL, in store.url.
	root, db, incoming, config string
	// live is board.live_dir, with a fresh snapshot of the running job's
	// node.
	live  string
	truth gendata.Truth
	// genStart and genEnd bound the generated jobs (whole hours).
	genStart, genEnd time.Time
	running          runningJob
	addr             string
	// scheme is http unless a web config file turns TLS on; client
	// trusts its certificate and login is the user serve's start is
	// polled as (TestPrivateData).
	scheme string
	client *http.Client
	login  [2]string
}

type runningJob struct {
	id      uint64
	user    string
	account string
	node    string
	gpus    []int
	start   time.Time
}

const cluster = "c1"

// newFixture generates two days ending about two hours before now and a
// job started ten minutes ago, and writes a gpusuite.toml for them.
func newFixture(t *testing.T, now time.Time) *fixture {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	l := ledgerdb.NewLedger(t)
	f := &fixture{root: root, db: l.Loc(), incoming: filepath.Join(root, "incoming")}
	if err := os.MkdirAll(f.incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	f.genStart = now.UTC().Truncate(time.Hour).Add(-50 * time.Hour)
	f.genEnd = f.genStart.Add(47 * time.Hour)
	var err error
	f.truth, err = gendata.Generate(f.incoming, gendata.Options{Cluster: cluster, Nodes: 3, GPUsPerNode: 4, Start: f.genStart,
		Duration: f.genEnd.Sub(f.genStart), Interval: time.Minute, Segment: time.Hour, JobsPerNode: 15, Aggregates: true, HookEvents: true, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	f.running = runningJob{id: 9_000_001, user: "zoe", account: "live", node: gendata.NodeName(0), gpus: []int{0, 1}, start: now.Add(-10 * time.Minute).Truncate(time.Second)}
	writeStart(t, filepath.Join(f.incoming, f.running.node), f.running)
	f.live = filepath.Join(root, "live")
	if err := os.MkdirAll(f.live, 0o755); err != nil {
		t.Fatal(err)
	}
	// An hour's interval: the snapshot stays fresh however long a loaded
	// machine takes to reach the subtests (10 s went stale after 30 s).
	writeSnapshot(t, f.live, record.Live{Node: f.running.node, Time: now.UTC(), Interval: 3600, GPUs: []record.LiveGPU{liveGPU(0, 70, 1024, f.running.id), liveGPU(1, 0, 0)}})
	f.addr = freeAddr(t)
	f.config = filepath.Join(root, "gpusuite.toml")
	store := fmt.Sprintf("path = %q", f.db)
	if l.URL != "" {
		store = fmt.Sprintf("url = %q", l.URL)
	}
	cfg := fmt.Sprintf(`[store]
%s
[ingest]
incoming = %q
quarantine = %q
archive = %q
keep = "delete"
sacct = ""
grace = "48h"
interval = "2s"
metrics_listen = %q
[agent]
interval = "1m"
[report]
tz = "UTC"
[web]
max_age = "5s"
[board]
live_dir = %q
`, store, f.incoming, filepath.Join(root, "quarantine"), filepath.Join(root, "archive"), f.addr, f.live)
	if err := os.WriteFile(f.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// writeStart writes a prolog event as the hooks do, for a job that has
// not ended.
func writeStart(t *testing.T, dir string, j runningJob) {
	t.Helper()
	ev := record.Event{Schema: record.EventSchema, Kind: record.JobStart, Time: j.start.UTC(), Source: "prolog", Cluster: cluster, Node: j.node}
	uid, gid := int64(1001), int64(1001)
	ev.Job.ID, ev.Job.User, ev.Job.UID, ev.Job.GID = j.id, j.user, &uid, &gid
	ev.Job.Account, ev.Job.Partition, ev.Job.Node, ev.Job.Cluster = j.account, "gpu", j.node, cluster
	ev.Job.GPUs = j.gpus
	for _, g := range j.gpus {
		idx := g
		e := uint64(5_000_000)
		ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: sim.UUID(j.node, g), Model: "NVIDIA H100 80GB HBM3", EnergyMJ: &e})
	}
	ev.Key = record.EventKey(cluster, j.id, 0, j.node, record.JobStart)
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, record.EventFileName(cluster, j.id, 0, j.node, record.JobStart)), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serve runs the real `gpuacct serve` on the fixture until the test ends
// and waits for its first pass to be visible through /api/v1/health.
func (f *fixture) serve(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncWriter{w: &bytes.Buffer{}}
	getenv := func(k string) string { return map[string]string{config.EnvPath: f.config}[k] }
	app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, Writer: io.Discard, ErrWriter: io.Discard,
		Commands: []*cli.Command{servecmd.Command(io.Discard, logs, getenv)}}
	done := make(chan error, 1)
	go func() { done <- app.RunContext(ctx, []string{"gpuacct", "serve"}) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not stop")
		}
	})
	// Poll health until the first pass shows, serve exits or 60 s pass.
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var h struct {
			Summary string `json:"summary"`
		}
		code, _ := f.get(t, "/api/v1/health", f.login, &h)
		if code == http.StatusOK && !strings.Contains(h.Summary, "never") {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		case <-deadline.C:
			t.Fatalf("serve: no successful pass within 60s (last health %d %q)", code, h.Summary)
		case <-tick.C:
		}
	}
}

func (f *fixture) url(path string) string {
	if f.scheme == "" {
		return "http://" + f.addr + path
	}
	return f.scheme + "://" + f.addr + path
}

// get fetches path through f's client as login (none when empty) and
// decodes a JSON body into v; it returns the status and the raw body
// (0 when the request failed).
func (f *fixture) get(t *testing.T, path string, login [2]string, v any) (int, []byte) {
	t.Helper()
	c := f.client
	if c == nil {
		c = &http.Client{Timeout: 60 * time.Second}
	}
	req, err := http.NewRequest(http.MethodGet, f.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if login[0] != "" {
		req.SetBasicAuth(login[0], login[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, b)
		}
	}
	return resp.StatusCode, b
}

// syncWriter collects serve's log, written from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// getJSON fetches url and decodes the body into v; it returns the status
// and the raw body.
func getJSON(t *testing.T, url string, v any) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, b)
		}
	}
	return resp.StatusCode, b
}

// cliOut runs a gpuacct report/job command in process, as a user would,
// against the fixture's configuration.
func (f *fixture) cliOut(t *testing.T, now time.Time, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	d := reportcmd.Deps{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return map[string]string{config.EnvPath: f.config}[k] },
		Now: func() time.Time { return now }, Width: func() int { return 0 }, StderrTTY: func() bool { return false },
		Euid: func() int { return 0 }, Username: func() string { return "root" }}
	app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, Writer: &out, ErrWriter: &errb,
		Commands: []*cli.Command{reportcmd.ReportCommand(d), reportcmd.JobCommand(d)}}
	// Flags after the JOBID, as cliwire.Run lets gpuacct take them.
	if err := app.Run(cliwire.Reorder(app, append([]string{"gpuacct"}, args...))); err != nil {
		t.Fatalf("gpuacct %s: %v (%s)", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}
