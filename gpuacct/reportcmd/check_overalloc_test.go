package reportcmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestCheckOverAllocation: a ledger whose job hours hold more idle or
// used time than was allocated in them (made so by poking two rows) is a
// problem line with their count; the same ledger sound is OK.
func TestCheckOverAllocation(t *testing.T) {
	now := time.Unix(t0+3600, 0)
	path := buildLedger(t, []fxJob{{ID: 1, User: "a", Acct: "x", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 3000},
		{ID: 2, User: "b", Acct: "x", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 3500}}, now)
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPass(context.Background(), store.Pass{Started: now.Add(-120 * time.Second), Finished: now.Add(-119 * time.Second), OK: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	check := func() (string, error) {
		t.Helper()
		d, out, _ := testDeps(now, nil)
		err := run(t, d, "check", "--no-live", dbOpt(path), "--stale", "2h")
		return out.String(), err
	}
	if out, err := check(); err != nil || !strings.HasPrefix(out, "OK: ") {
		t.Fatalf("a sound ledger: %v\n%s", err, out)
	}
	if n := ledgerdb.Exec(t, path, `UPDATE job_hours SET idle_gpu_s = alloc_gpu_s + 60 WHERE job IN (SELECT id FROM jobs WHERE job_id = 1)`); n == 0 {
		t.Fatal("job 1 has no job hours to poke")
	}
	ledgerdb.Exec(t, path, `UPDATE job_hours SET used_gpu_s = alloc_gpu_s * 2 WHERE job IN (SELECT id FROM jobs WHERE job_id = 2)`)
	want := "CRITICAL: ledger: 2 job hours (of the newest 50000 job runs) hold more used, idle or sampled GPU time than was allocated in them: " +
		"a ledger bug; gpuacct serve logs each with its job and hour (\"job hour over its allocation\")\n"
	out, err := check()
	if err == nil || out != want {
		t.Errorf("a ledger over its allocation: %v\n got %q\nwant %q", err, out, want)
	}
}
