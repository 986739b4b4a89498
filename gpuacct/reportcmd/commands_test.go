package reportcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

func TestIgnoreFlow(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	task := int64(3)
	path := buildLedger(t, []fxJob{
		{ID: 10, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 3600},
		{ID: 11, User: "bob", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 503, ArrayJob: 500, Task: &task, User: "bob", Acct: "vision", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 1800},
	}, now)
	reqs := t.TempDir()
	total := func() string {
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, "report", "teams", dbOpt(path), "--tz", "UTC", "--start", "2026-01-01", "--end", "2026-01-02", "-P", "-n"); err != nil {
			t.Fatal(err)
		}
		return strings.Split(out.String(), "|")[1]
	}
	if got := total(); got != "3.5" {
		t.Fatalf("before: %s GPU-h", got)
	}
	// Not root, not the service user: refused.
	d, _, _ := testDeps(now, nil)
	d.Euid = func() int { return 4242 }
	if err := run(t, d, "ignore", "10", "--reason", "x", dbOpt(path), "--requests", reqs); err == nil || !strings.Contains(err.Error(), "only root or the service user") {
		t.Fatalf("non-root: %v", err)
	}
	// No writer runs: applied at once.
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, "ignore", "10", "500_3", "--reason", "vendor benchmark", dbOpt(path), "--requests", reqs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "applied") {
		t.Errorf("ignore said %q", out.String())
	}
	if got := total(); got != "1" {
		t.Errorf("after ignoring 2 GPU-h and 0.5 GPU-h: %s GPU-h, want 1", got)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "ignore", "--list", dbOpt(path), "--requests", reqs, "--format", "csv"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "10,alice,vision") || !strings.Contains(out.String(), "500_3,bob") || !strings.Contains(out.String(), "vendor benchmark (by root (sudo by alice)") {
		t.Errorf("ignore --list:\n%s", out.String())
	}
	// A writer runs (serve): the request waits in the spool.
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "unignore", "10", dbOpt(path), "--requests", reqs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "queued") {
		t.Errorf("unignore with serve running said %q", out.String())
	}
	if got := total(); got != "1" {
		t.Errorf("a queued request changed the totals: %s", got)
	}
	// serve's pass applies it.
	n, err := requests.Apply(context.Background(), st, requests.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return uid == 0 || uid == os.Getuid() }})
	st.Close()
	if err != nil || n != 1 {
		t.Fatalf("apply: %d, %v", n, err)
	}
	if got := total(); got != "3" {
		t.Errorf("after unignore: %s GPU-h, want 3", got)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "ignore", "--list", "--log", "--requests", reqs, "--format", "csv", dbOpt(path)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "ignore,10 500_3,root (sudo by alice),applied,vendor benchmark") || !strings.Contains(lines[2], "unignore,10,") {
		t.Errorf("log:\n%s", out.String())
	}
	// A planted request (group-writable) is refused, not applied.
	planted := filepath.Join(reqs, "pending", "zz.json")
	os.WriteFile(planted, []byte(`{"schema":"gpusuite.ignore/v1","id":"zz","action":"ignore","jobs":["11"],"by":"mallory","uid":0,"time":"2026-01-01T00:00:00Z"}`), 0o666)
	os.Chmod(planted, 0o666)
	st, _ = openWriter(path)
	_, err = requests.Apply(context.Background(), st, requests.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return true }})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := total(); got != "3" {
		t.Errorf("a planted request was applied: %s GPU-h", got)
	}
}

func TestCheck(t *testing.T) {
	now := time.Unix(t0+3600, 0)
	path := buildLedger(t, []fxJob{{ID: 1, User: "a", Acct: "x", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 600},
		{ID: 2, User: "a", Acct: "x", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 3500}}, now)
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPass(context.Background(), store.Pass{Started: now.Add(-120 * time.Second), Finished: now.Add(-119 * time.Second), OK: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d, out, _ := testDeps(now, nil)
	err = run(t, d, "check", "--no-live", dbOpt(path), "--stale", "15m", "--lag", "10m")
	if err == nil {
		t.Fatalf("a silent node passed: %s", out.String())
	}
	if got := strings.TrimSpace(out.String()); !strings.HasPrefix(got, "CRITICAL: node gpu01: no data for 50m0s") || strings.Count(got, "\n") != 0 {
		t.Errorf("check printed %q", got)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "check", "--no-live", dbOpt(path), "--stale", "2h"); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	if !strings.HasPrefix(out.String(), "OK: 2 nodes, 0 silent") {
		t.Errorf("check printed %q", out.String())
	}
	// A failed last pass, and the lag.
	st, err = openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPass(context.Background(), store.Pass{Started: now.Add(-60 * time.Second), Finished: now.Add(-59 * time.Second), Error: "disk full"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d, out, _ = testDeps(now.Add(time.Hour), nil)
	err = run(t, d, "check", "--no-live", dbOpt(path), "--stale", "3h", "--lag", "10m")
	if err == nil || !strings.Contains(out.String(), "ingest: last successful pass 1h2m0s ago") || !strings.Contains(out.String(), "failed: disk full") {
		t.Errorf("check: %v\n%s", err, out.String())
	}
	d, _, _ = testDeps(now, nil)
	err = run(t, d, "check", "--db", filepath.Join(t.TempDir(), "none.db"))
	if err == nil || !strings.HasPrefix(err.Error(), "CRITICAL: accounting database") {
		t.Errorf("missing db: %v", err)
	}
}
