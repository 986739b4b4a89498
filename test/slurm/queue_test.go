package slurm_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// TestQueueFromSqueue: pending jobs that ask for GPUs, one by --gres
// (per node) and one by --gpus (per job), show in the real squeue's
// queue under their partition × model with their wait and Slurm's
// estimated start. Slurm refuses at submission a job that asks for more
// GPUs than any node has ("Requested node configuration is not
// available"), so these wait on --begin and --hold instead. Other
// packages' jobs may wait beside them: the counts are at least theirs.
func TestQueueFromSqueue(t *testing.T) {
	c := slurm.Get(t)
	begin := time.Now().Add(time.Hour).Truncate(time.Second)
	ids := []uint64{
		c.Sbatch(t, "", "-p", "billed", "--gres=gpu:t4:2", "--begin="+begin.Format("2006-01-02T15:04:05"), "--wrap", "true"),
		c.Sbatch(t, "", "-p", "billed", "--gpus=t4:1", "--hold", "--wrap", "true"),
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, id := range ids {
			_ = c.Cmd(ctx, "", "scancel", strconv.FormatUint(id, 10)).Run()
		}
	})

	r := slurmstate.Reader{Run: slurmstate.Exec{Env: c.Env()}.Run, Timeout: 30 * time.Second}
	q, err := r.Queue(context.Background())
	if err != nil {
		t.Fatalf("read the queue: %v", err)
	}
	var row *slurmstate.QueueRow
	for i := range q.Rows {
		if q.Rows[i].Partition == "billed" && q.Rows[i].Model == "t4" {
			row = &q.Rows[i]
		}
	}
	if row == nil {
		t.Fatalf("no billed × t4 row in the queue: %+v", q.Rows)
	}
	if row.Jobs < 2 || row.GPUs < 3 {
		t.Errorf("billed × t4: %d jobs asking %d GPUs, want at least 2 and 3", row.Jobs, row.GPUs)
	}
	if row.Oldest.IsZero() || row.Oldest.After(time.Now()) || q.At.Sub(row.Oldest) < 0 {
		t.Errorf("billed × t4: oldest submit %s at %s, want a wait of 0 or more", row.Oldest, q.At)
	}
	if row.NextStart.IsZero() || row.NextStart.After(begin.Add(time.Minute)) {
		t.Errorf("billed × t4: estimated start %s, want by the --begin %s", row.NextStart, begin)
	}
}
