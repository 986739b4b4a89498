package report

import (
	"context"
	"time"

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
