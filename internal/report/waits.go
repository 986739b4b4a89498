package report

import (
	"context"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// Wait is the median wait from submit to start of the job runs of one
// GPU model and count (store.Waits).
type Wait = store.Wait

// Waits is the median wait from submit to start per GPU model and count
// of the job runs that started in [from, to); cut says the oldest starts
// were left out (store.MaxWaitRows).
func (d *Ledger) Waits(ctx context.Context, from, to time.Time) ([]Wait, bool, error) {
	w, cut, err := d.st.Waits(ctx, from, to)
	return w, cut, d.wrap(err)
}

// QueueWaits is the queue's "started within" rows from the ledger's waits,
// as the board and `gpuacct status --queue` show them.
func QueueWaits(ws []Wait) []slurmstate.Wait {
	out := make([]slurmstate.Wait, 0, len(ws))
	for _, w := range ws {
		out = append(out, slurmstate.Wait{Model: w.Model, GPUs: w.GPUs, Jobs: w.Jobs, MedianS: int64(w.Median / time.Second)})
	}
	return out
}
