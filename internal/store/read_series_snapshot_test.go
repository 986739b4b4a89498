package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSeriesReadsSeeOneFold: a reader takes the fold mark, then the
// packs before it and the rows after it, in separate statements. A
// housekeeping pass that folds the next span commits right after the
// mark is read (markRead); every read must still equal the rows-only
// ledger's, not lose the span that moved from rows to packs between its
// statements. On the engine under test.
func TestSeriesReadsSeeOneFold(t *testing.T) {
	ctx := context.Background()
	const gpus, hours = 2, 50
	rowsOnly := openTemp(t)
	buildSeries(t, rowsOnly, gpus, hours, nil)
	want := seriesReads(t, rowsOnly, hours)

	w, l := openLedger(t)
	old := foldPassBuckets
	foldPassBuckets = 1
	t.Cleanup(func() { foldPassBuckets = old })
	buildSeries(t, w, gpus, hours, nil)
	r, err := Open(ctx, Options{Path: l.Path, URL: l.URL, ReadOnly: true, BusyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	folds := 0
	r.markRead = func() {
		before, err := w.foldedMark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		batchOf(t, w, seriesFoldAt, func(b *Batch) error {
			_, err := b.PruneSamples(seriesT0.Add(-48 * time.Hour))
			return err
		})
		if after, err := w.foldedMark(ctx); err != nil {
			t.Fatal(err)
		} else if after != before {
			folds++
		}
	}
	got := seriesReads(t, r, hours)
	if folds == 0 {
		t.Fatal("no fold committed between a reader's statements: the test tests nothing")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reads with %d folds committed between their statements (-rows only +got):\n%s", folds, d)
	}
}
