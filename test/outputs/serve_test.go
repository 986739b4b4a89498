package outputs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// page is one GET of gpuacct serve's dashboard or API.
type page struct {
	name, path string
	clock      bool // the answer speaks of now
}

// pages are read from gpuacct serve --read-only over the demo's ledger
// and the fixed live board (testdata/fixture/serve.toml).
func pages() []page {
	const w = "start=2026-10-05&end=2026-10-12"
	return []page{
		{name: "api-health", path: "/api/v1/health", clock: true},
		{name: "api-report-teams", path: "/api/v1/report/teams?" + w},
		{name: "api-report-users-per-day", path: "/api/v1/report/users?period=day&" + w},
		{name: "api-report-tree", path: "/api/v1/report/tree?" + w},
		{name: "api-report-top-teams", path: "/api/v1/report/top?by=teams&limit=2&units=percent&" + w},
		{name: "api-report-cluster", path: "/api/v1/report/cluster?" + w},
		{name: "api-jobs", path: "/api/v1/jobs?start=2026-10-05&end=2026-10-06"},
		{name: "api-job", path: "/api/v1/jobs/demo/1055"},
		{name: "api-job-series", path: "/api/v1/jobs/demo/1055/series"},
		{name: "api-nodes", path: "/api/v1/nodes", clock: true},
		{name: "api-board", path: "/api/v1/board", clock: true},
		{name: "api-free", path: "/api/v1/free", clock: true},
		{name: "api-notes", path: "/api/v1/notes", clock: true},
		{name: "api-bad-date", path: "/api/v1/report/teams?start=2026-02-30"},
		{name: "api-unknown-user", path: "/api/v1/report/users?users=alce&" + w},
		{name: "api-unknown-parameter", path: "/api/v1/report/teams?bogus=1&" + w},
		{name: "api-job-missing", path: "/api/v1/jobs/demo/424242"},
		{name: "api-no-route", path: "/api/v1/bogus"},
		{name: "page-board", path: "/", clock: true},
		{name: "page-accounting", path: "/accounting?" + w, clock: true},
		{name: "page-team", path: "/team/nlp?" + w, clock: true},
		{name: "page-user", path: "/user/carol?" + w, clock: true},
		{name: "page-job", path: "/job/demo/1055", clock: true},
		{name: "page-missing", path: "/nope", clock: true},
	}
}

var listening = regexp.MustCompile(`addr=(127\.0\.0\.1:[0-9]+)`)

// serve starts gpuacct serve --read-only under serve.toml and returns its
// address; it is stopped (SIGTERM, then killed) when the test ends.
func (w *world) serve(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	cmd := exec.CommandContext(ctx, filepath.Join(w.bin, "gpuacct"), "serve", "--read-only")
	cmd.Env = w.env([]string{"GPUSUITE_CONFIG={{dir}}/serve.toml"})
	cmd.Dir = w.dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		// A line too long for the scanner ends it: the rest is drained, so
		// that serve never blocks on a full pipe.
		io.Copy(io.Discard, stderr)
		if !sent {
			close(addr)
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cancel()
			<-done
		}
		cmd.Wait()
		cancel()
	})
	var a string
	select {
	case got, ok := <-addr:
		if !ok {
			t.Fatal("gpuacct serve ended without saying where it listens")
		}
		a = got
	case <-time.After(runTimeout):
		t.Fatal("gpuacct serve said nowhere it listens within", runTimeout)
	}
	// It listens before its store is open: it answers 503 until then.
	client := &http.Client{Timeout: runTimeout}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(runTimeout)
	for {
		resp, err := client.Get("http://" + a + "/api/v1/health")
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxOutput))
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				return a
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("gpuacct serve on %s not ready within %v (last: %v)", a, runTimeout, err)
		}
	}
}

// get reads one page as its golden holds it: status, the headers a
// browser acts on and the body.
func (w *world) get(t *testing.T, client *http.Client, addr string, p page) string {
	t.Helper()
	resp, err := client.Get("http://" + addr + p.path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput+1))
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > maxOutput {
		t.Fatalf("GET %s: more than %d bytes", p.path, maxOutput)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s\nstatus %d\n", p.path, resp.StatusCode)
	for _, h := range []string{"Content-Type", "Cache-Control", "Allow"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	fmt.Fprintf(&b, "--- body\n%s", body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		b.WriteString("\n(no newline at end)\n")
	}
	return strings.ReplaceAll(w.normalise(b.String(), p.clock), addr, "$ADDR")
}
