package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestWaitsMedianPerModelAndCount: runs reconciled with sacct's submit
// give the median wait per GPU model and count over the runs that started
// in the window; a run without a submit, one started outside the window
// and an ignored one do not count.
func TestWaitsMedianPerModelAndCount(t *testing.T) {
	s := openTemp(t)
	base := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	now := base.Add(9 * 24 * time.Hour)
	type run struct {
		id     uint64
		model  string
		gpus   int
		start  time.Duration // after base
		wait   time.Duration // 0: sacct gave no submit
		ignore bool
	}
	runs := []run{
		{id: 1, model: "H100", gpus: 2, start: 30 * time.Hour, wait: 4 * time.Minute},
		{id: 2, model: "H100", gpus: 2, start: 31 * time.Hour, wait: 10 * time.Minute},
		{id: 3, model: "H100", gpus: 2, start: 32 * time.Hour, wait: 60 * time.Minute},
		{id: 4, model: "H100", gpus: 8, start: 40 * time.Hour, wait: 2 * time.Hour},
		{id: 5, model: "H100", gpus: 8, start: 41 * time.Hour, wait: 3 * time.Hour},
		{id: 6, model: "A100", gpus: 1, start: 50 * time.Hour, wait: 30 * time.Second},
		{id: 7, model: "A100", gpus: 1, start: 51 * time.Hour},                                    // no submit
		{id: 8, model: "A100", gpus: 1, start: 2 * time.Hour, wait: time.Hour},                    // before the window
		{id: 9, model: "A100", gpus: 1, start: 52 * time.Hour, wait: 5 * time.Hour, ignore: true}, // ignored
	}
	for _, r := range runs {
		start := base.Add(r.start)
		end := start.Add(20 * time.Minute)
		event := func(k record.Kind, at time.Time) *record.Event {
			e := evJob(k, "n1", at, r.gpus, r.id)
			for i := range e.Job.GPUs {
				e.GPUs = append(e.GPUs, record.GPU{Minor: i, Model: r.model})
			}
			return e
		}
		eventsOf(t, s, now, event(record.JobStart, start), event(record.JobEnd, end))
	}
	todo := unreconciled(t, s, now)
	byID := map[uint64]run{}
	for _, r := range runs {
		byID[r.id] = r
	}
	batchOf(t, s, now, func(b *Batch) error {
		for _, j := range todo {
			r := byID[j.JobID]
			tm := SlurmTimes{Start: base.Add(r.start), End: base.Add(r.start + 20*time.Minute), State: "completed"}
			if r.wait > 0 {
				tm.Submit = tm.Start.Add(-r.wait)
			}
			if err := b.Reconcile(j.Row, tm); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := s.db.Exec(`UPDATE jobs SET ignored = 1 WHERE job_id = 9`); err != nil {
		t.Fatal(err)
	}
	got, cut, err := s.Waits(context.Background(), base.Add(24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	want := []Wait{
		{Model: "A100", GPUs: 1, Jobs: 1, Median: 30 * time.Second},
		{Model: "H100", GPUs: 2, Jobs: 3, Median: 10 * time.Minute},
		{Model: "H100", GPUs: 8, Jobs: 2, Median: 150 * time.Minute},
	}
	if diff := cmp.Diff(want, got); diff != "" || cut {
		t.Errorf("Waits (-want +got), cut %v:\n%s", cut, diff)
	}
}
