package slurm_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// TestStartedWithin: a GPU job held, then released, waits in the real
// Slurm's queue; ingest with sacct records the run's submit as sacct
// has it, and gpuacct status --queue over that ledger shows the job's
// GPU count with sacct's wait (Start − Submit) as its median.
func TestStartedWithin(t *testing.T) {
	c := slurm.Get(t)
	gpuacct := slurm.Binary(t, "gpuacct")
	id := c.Sbatch(t, "", "--gres=gpu:2", "--hold", "--wrap", "true")
	c.WaitState(t, id, "PENDING", time.Minute)
	c.Run(t, "", "scontrol", "release", strconv.FormatUint(id, 10))
	c.WaitAccounted(t, 4*time.Minute, 1, id)
	c.WaitGone(t, id, 2*time.Minute)

	f := strings.Split(strings.TrimSpace(c.Run(t, "", "sacct", "-X", "-n", "-P", "-j", strconv.FormatUint(id, 10), "-o", "Submit,Start")), "|")
	if len(f) != 2 {
		t.Fatalf("sacct -o Submit,Start of job %d: %q", id, f)
	}
	var at [2]time.Time
	for i := range at {
		var err error
		if at[i], err = time.ParseInLocation("2006-01-02T15:04:05", f[i], time.Local); err != nil {
			t.Fatalf("sacct -o Submit,Start of job %d: %v", id, err)
		}
	}
	submit, start := at[0], at[1]

	l, _ := sreportLedger(t, gpuacct, c, []uint64{id}, "sacct")
	want := fmt.Sprintf("%d|%d", submit.Unix(), start.Unix())
	if got := ledgerdb.Strings(t, l.db, fmt.Sprintf(`SELECT coalesce(submit, -1), start FROM jobs WHERE job_id = %d`, id)); len(got) != 1 || got[0] != want {
		t.Fatalf("ledger's submit|start of job %d = %q, want sacct's %s", id, got, want)
	}

	out, _ := l.run(t, "status", "--queue", "--format", "json")
	var q slurmstate.Queue
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		t.Fatalf("status --queue --format json: %v\n%s", err, out)
	}
	if len(q.Waits) != 1 || q.Waits[0].GPUs != 2 || q.Waits[0].Jobs != 1 || q.Waits[0].MedianS != int64(start.Sub(submit)/time.Second) {
		t.Errorf("status --queue: started within %+v, want job %d's 2 GPUs started within %s", q.Waits, id, start.Sub(submit))
	}
}
