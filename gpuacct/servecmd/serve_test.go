package servecmd

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// waitFor polls cond until it holds or the (generous) deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, 90*time.Second, 20*time.Millisecond, cond)
}

// serveConfig is a serve on l with its own directories, /metrics on a
// free port and the dashboard on.
func serveConfig(t *testing.T, l ledgerdb.Ledger) config.Config {
	t.Helper()
	root := t.TempDir()
	cfg := config.Default()
	cfg.Store.Path, cfg.Store.URL = filepath.Join(root, "gpuacct.db"), l.URL
	if l.Path != "" {
		cfg.Store.Path = l.Path
	}
	for _, d := range []struct {
		dst  *string
		name string
	}{{&cfg.Ingest.Incoming, "incoming"}, {&cfg.Ingest.Quarantine, "quarantine"}, {&cfg.Ingest.Archive, "archive"}, {&cfg.Board.LiveDir, "live"}} {
		*d.dst = filepath.Join(root, d.name)
		if err := os.Mkdir(*d.dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// serve makes the request queues itself (not /data's).
	cfg.Report.Requests = filepath.Join(root, "requests")
	cfg.Ingest.Sacct = ""
	cfg.Ingest.Watch = false
	cfg.Ingest.Interval = config.Dur(200 * time.Millisecond)
	cfg.Ingest.MetricsListen = "127.0.0.1:0"
	return cfg
}

// startServe runs m until ctx ends, closing it when the test ends, and
// returns the address /metrics listens on and the channel Run's error
// comes on.
func startServe(ctx context.Context, t *testing.T, m *Main, logs *logs.Buffer) (string, chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { m.Close() })
	select {
	case addr := <-m.Addr:
		return addr, done
	case err := <-done:
		t.Fatalf("serve ended before listening: %v; log %s", err, logs.String())
	case <-time.After(90 * time.Second):
		t.Fatal("/metrics not listening in 90s")
	}
	return "", done
}

// get fetches url; "" and the status when it cannot.
func get(url string) (string, int) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b), resp.StatusCode
}

// metric is a sample's value as /metrics writes it, "" if absent.
func metric(body, name string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// serveWaits runs serve on a ledger whose writer lock another holds: it
// must say so on /metrics and in its log, answer the dashboard's paths
// with 503, and take over (waiting 0, a pass run) once the holder lets go.
func serveWaits(t *testing.T, l ledgerdb.Ledger, engine string) {
	holder, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var logs logs.Buffer
	m := &Main{Stderr: &logs, Getenv: func(string) string { return "" }, Config: serveConfig(t, l), Addr: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startServe(ctx, t, m, &logs)
	var body string
	waitFor(t, "gpuacct_store_writer_waiting 1", func() bool {
		body, _ = get("http://" + addr + "/metrics")
		return metric(body, "gpuacct_store_writer_waiting") == "1"
	})
	if v := metric(body, `gpuacct_store_engine_info{engine="`+engine+`"}`); v != "1" {
		t.Errorf("gpuacct_store_engine_info for %s: %q, want 1 in\n%s", engine, v, body)
	}
	if !strings.Contains(logs.String(), "another writer holds the ledger: ") || !strings.Contains(logs.String(), "; waiting to take over") {
		t.Errorf("log has no waiting line:\n%s", logs.String())
	}
	if _, code := get("http://" + addr + "/api/v1/health"); code != http.StatusServiceUnavailable {
		t.Errorf("/api/v1/health while waiting: status %d, want 503", code)
	}
	select {
	case err := <-done:
		t.Fatalf("serve ended while another writer held the ledger: %v", err)
	default:
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gpuacct_store_writer_waiting 0 and a pass", func() bool {
		body, _ = get("http://" + addr + "/metrics")
		ok := metric(body, "gpuacct_ingest_last_success_timestamp_seconds")
		return metric(body, "gpuacct_store_writer_waiting") == "0" && ok != "" && ok != "0"
	})
	if _, code := get("http://" + addr + "/api/v1/health"); code != http.StatusOK {
		t.Errorf("/api/v1/health once serving: status %d, want 200", code)
	}
	// The writer made both request queues: no command's first filing
	// makes one (a `sudo gpuacct ignore` left pending/ root's).
	for _, d := range []string{"pending", "applied", "notes/pending", "notes/applied"} {
		if fi, err := os.Stat(filepath.Join(m.Config.Report.Requests, d)); err != nil || !fi.IsDir() {
			t.Errorf("request queue %s not made by serve: %v", d, err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v; log %s", err, logs.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatal("serve did not stop in 90s")
	}
}

func TestPostgresServeWaitsForWriter(t *testing.T) {
	serveWaits(t, ledgerdb.Ledger{URL: ledgerdb.NewPostgresDB(t)}, store.EnginePostgres)
}

// TestServeWaitsForWriter is the same on the engine under test (on
// SQLite: the lock file).
func TestServeWaitsForWriter(t *testing.T) {
	serveWaits(t, ledgerdb.NewLedger(t), ledgerdb.Engine(t))
}

// TestPostgresServeExitsOnLostLock: when the session that holds the
// writer lock ends (a server restart, a cut connection), serve stops with
// an error (exit 1: systemd starts it again, and the new one waits).
func TestPostgresServeExitsOnLostLock(t *testing.T) {
	url := ledgerdb.NewPostgresDB(t)
	var logs logs.Buffer
	m := &Main{Stderr: &logs, Getenv: func(string) string { return "" }, Config: serveConfig(t, ledgerdb.Ledger{URL: url}), Addr: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startServe(ctx, t, m, &logs)
	waitFor(t, "a pass", func() bool {
		body, _ := get("http://" + addr + "/metrics")
		ok := metric(body, "gpuacct_ingest_last_success_timestamp_seconds")
		return ok != "" && ok != "0"
	})
	ledgerdb.Exec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_locks
 WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	select {
	case err := <-done:
		if !errors.Is(err, errLostLock) {
			t.Fatalf("serve ended with %v, want the lost-lock error", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("serve still running 90s after its lock session ended")
	}
	if !strings.Contains(logs.String(), "lost the ledger's writer lock") {
		t.Errorf("log does not say the lock was lost:\n%s", logs.String())
	}
}

// TestServeReadOnlyBesideWriter: two --read-only serves answer the
// dashboard and API while another process holds the writer lock; they
// neither wait for it nor ingest.
func TestServeReadOnlyBesideWriter(t *testing.T) {
	l := ledgerdb.NewLedger(t)
	holder, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type run struct {
		m    *Main
		logs *logs.Buffer
		done chan error
		addr string
	}
	var runs []*run
	for range 2 {
		r := &run{logs: &logs.Buffer{}}
		r.m = &Main{Stderr: r.logs, Getenv: func(string) string { return "" }, Config: serveConfig(t, l), Addr: make(chan string, 1), ReadOnly: true}
		r.addr, r.done = startServe(ctx, t, r.m, r.logs)
		runs = append(runs, r)
	}
	for i, r := range runs {
		waitFor(t, "a healthy read-only dashboard", func() bool {
			_, code := get("http://" + r.addr + "/api/v1/health")
			return code == http.StatusOK
		})
		body, _ := get("http://" + r.addr + "/metrics")
		if v := metric(body, "gpuacct_store_writer_waiting"); v != "0" {
			t.Errorf("serve %d: gpuacct_store_writer_waiting %q, want 0 (a reader waits for no lock)", i, v)
		}
		if v := metric(body, "gpuacct_ingest_last_success_timestamp_seconds"); v != "" {
			t.Errorf("serve %d: an ingest metric on a read-only serve: %q", i, v)
		}
		if !strings.Contains(r.logs.String(), "serving read-only") {
			t.Errorf("serve %d: log does not say read-only:\n%s", i, r.logs.String())
		}
	}
	cancel()
	for i, r := range runs {
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("read-only serve %d: %v", i, err)
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("read-only serve %d did not stop in 90s", i)
		}
	}
}
