package store

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestHourViolationsSkipEstimatedStarts: a job part whose prolog never
// came has its end standing in for its start until housekeeping finds
// Slurm's (or the first sample's), so its hours hold samples but no
// allocation yet. That is not known to be wrong: it is not reported as
// over its allocation (it would be a false alarm in the log and the
// counter).
func TestHourViolationsSkipEstimatedStarts(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	end := start.Add(30 * time.Minute)
	now := end.Add(time.Hour)
	s := openTemp(t)
	util := uint32(80)
	var touched []JobHour
	batchOf(t, s, now, func(b *Batch) error {
		if err := b.Event(ev(record.JobEnd, "n1", end, 1)); err != nil {
			return err
		}
		var ss []record.Sample
		for i := 1; i < 29; i++ {
			ss = append(ss, record.Sample{Time: start.Add(time.Duration(i) * time.Minute), UUID: "GPU-00000000-0000-0000-0000-000000000001",
				GPUUtil: &util, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
		}
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 60}, ss)
		return err
	})
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	// The hours the samples went to, whichever batch touched them.
	rows, err := b.tx.QueryContext(ctx, `SELECT job, node_id, hour FROM job_hours`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h JobHour
		if err := rows.Scan(&h.Job, &h.Node, &h.Hour); err != nil {
			t.Fatal(err)
		}
		touched = append(touched, h)
	}
	rows.Close()
	b.Rollback()
	if len(touched) == 0 {
		t.Fatal("no job hours: the samples were not counted")
	}
	v, err := s.HourViolations(ctx, touched, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 0 {
		t.Errorf("job hours of a part whose start is an estimate reported over allocation: %+v", v)
	}
	n, _, err := s.CountHourViolations(ctx, 100, 100)
	if err != nil || n != 0 {
		t.Errorf("CountHourViolations = %d, %v; want 0 while the start is an estimate", n, err)
	}
}
