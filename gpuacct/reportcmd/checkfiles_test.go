package reportcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestCheckFiles: check fails while incoming holds a file that outlived
// report.check_left_passes passes, and while a job has no start event;
// it counts the quarantine and the passes' quarantined and refused files.
func TestCheckFiles(t *testing.T) {
	now := time.Unix(t0+3600, 0)
	path := buildLedger(t, []fxJob{{ID: 1, User: "a", Acct: "x", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3500}}, now)
	dir := t.TempDir()
	incoming, quarantine := filepath.Join(dir, "incoming"), filepath.Join(dir, "quarantine")
	for _, d := range []string{filepath.Join(incoming, "gpu01"), filepath.Join(quarantine, "gpu01")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mtime time.Time) {
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		q := filepath.Join(quarantine, "gpu01", fmt.Sprintf("bad%d.jsonl", i))
		write(q, now)
		write(q+".reason", now)
	}
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	// Four passes a minute apart, the newest 20 s ago.
	for i, q := range []int{0, 3, 0, 1} {
		s := now.Unix() - int64(200-60*i)
		if err := st.RecordPass(context.Background(), store.Pass{Started: time.Unix(s, 0), Finished: time.Unix(s+1, 0), OK: true, Quarantined: q, Refused: 1}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	cfg := filepath.Join(dir, "gpusuite.toml")
	// grace well under the stuck file's age, so that passes decide.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[store]\n%s[ingest]\nincoming = %q\nquarantine = %q\ngrace = \"1m\"\n", storeKey(path), incoming, quarantine)), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(args ...string) (string, error) {
		d, out, _ := testDeps(now, nil)
		err := run(t, d, append([]string{"--config", cfg, "check", "--no-live", "--stale", "2h"}, args...)...)
		return strings.TrimSpace(out.String()), err
	}
	// A file that arrived after the third most recent pass began: fine.
	write(filepath.Join(incoming, "gpu01", "new.jsonl"), now.Add(-90*time.Second))
	out, err := check()
	if err != nil {
		t.Fatalf("healthy: %v: %s", err, out)
	}
	if !strings.Contains(out, "2 files in quarantine; last 24 h: 4 files quarantined, 4 refused") {
		t.Errorf("summary lacks the quarantine counts: %q", out)
	}
	// One from before it: stuck.
	stuck := filepath.Join(incoming, "gpu01", "stuck.jsonl")
	write(stuck, now.Add(-150*time.Second))
	out, err = check()
	if err == nil || !strings.Contains(out, "CRITICAL: incoming: 1 files outlived 3 ingest passes (oldest "+stuck) {
		t.Errorf("stuck file: %v: %q", err, out)
	}
	// A file ingest may still be deferring (younger than ingest.grace)
	// is not stuck, however many passes it outlived.
	d, gout, _ := testDeps(now, nil)
	if err := run(t, d, "--config", writeGrace(t, cfg, "10m"), "check", "--no-live", "--stale", "2h"); err != nil {
		t.Errorf("within ingest.grace: %v: %q", err, gout.String())
	}
	// Four passes allowed: the stuck file is younger than that.
	if out, err := check("--left-passes", "4"); err != nil {
		t.Errorf("--left-passes 4: %v: %q", err, out)
	}
	if out, err := check("--left-passes", "0"); err != nil {
		t.Errorf("--left-passes 0 skips: %v: %q", err, out)
	}
	if _, err := check("--left-passes", "-1"); err == nil || !strings.Contains(err.Error(), "--left-passes -1") {
		t.Errorf("--left-passes -1: %v", err)
	}
	if err := os.Remove(stuck); err != nil {
		t.Fatal(err)
	}
	// A job that only ended (its start event never arrived).
	ledgerdb.Exec(t, path, `INSERT INTO jobs(cluster, job_id, user, end, state) VALUES('c1', 99, 'a', ?, 'completed')`, now.Unix()-3000)
	out, err = check()
	if err == nil || !strings.Contains(out, "CRITICAL: ledger: 1 jobs have no start event") {
		t.Errorf("job without start: %v: %q", err, out)
	}
}

// writeGrace writes a copy of the config file cfg with ingest.grace set
// to grace and returns its path.
func writeGrace(t *testing.T, cfg, grace string) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "grace.toml")
	s := strings.Replace(string(b), `grace = "1m"`, fmt.Sprintf("grace = %q", grace), 1)
	if s == string(b) {
		t.Fatal("config has no ingest.grace to replace")
	}
	if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
