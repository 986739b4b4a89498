package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

func ev(kind record.Kind, node string, at time.Time, gpus int) *record.Event {
	e := &record.Event{Schema: record.EventSchema, Kind: kind, Time: at, Cluster: "c", Node: node}
	e.Job.ID, e.Job.User, e.Job.Account, e.Job.Partition = 5, "alice", "physics", "gpu"
	for i := 0; i < gpus; i++ {
		e.Job.GPUs = append(e.Job.GPUs, i)
	}
	e.Key = record.EventKey("c", 5, 0, node, kind)
	return e
}

// batchOf runs f in one batch at now on s and commits it.
func batchOf(t *testing.T, s *Ledger, now time.Time, f func(b *Batch) error) {
	t.Helper()
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := f(b); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

type roll struct {
	User    string
	Ignored bool
	Alloc   int64
	Used    float64
	Jobs    int64
}

func rollups(t *testing.T, s *Ledger, table string) []roll {
	t.Helper()
	rows, err := s.db.Query(`SELECT user, ignored, sum(alloc_gpu_s), sum(used_gpu_s), sum(jobs) FROM ` + table + ` GROUP BY user, ignored HAVING sum(alloc_gpu_s) != 0 OR sum(used_gpu_s) != 0 OR sum(jobs) != 0 ORDER BY user, ignored`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []roll
	for rows.Next() {
		var r roll
		if err := rows.Scan(&r.User, &r.Ignored, &r.Alloc, &r.Used, &r.Jobs); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestLedgerMovesRollups: samples before the job's events, a job over two
// nodes crossing hours, then ignoring it: the rollups follow every step.
func TestLedgerMovesRollups(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	now := t0.Add(3 * time.Hour)
	util := uint32(50)
	// Samples come after the job's start on their node (invariant 8).
	batchOf(t, s, now, func(b *Batch) error {
		for _, e := range []*record.Event{ev(record.JobStart, "n1", t0, 2), ev(record.JobStart, "n2", t0, 4)} {
			if err := b.Event(e); err != nil {
				return err
			}
		}
		return nil
	})
	batchOf(t, s, now, func(b *Batch) error {
		h := &record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 60}
		var ss []record.Sample
		for i := 0; i < 60; i++ {
			ss = append(ss, record.Sample{Time: t0.Add(time.Duration(i) * time.Minute), UUID: "GPU-00000000-0000-0000-0000-000000000001",
				GPUUtil: &util, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
		}
		_, err := b.Segment(h, ss)
		return err
	})
	batchOf(t, s, now, func(b *Batch) error {
		for _, e := range []*record.Event{ev(record.JobEnd, "n1", t0.Add(90*time.Minute), 2), ev(record.JobEnd, "n2", t0.Add(90*time.Minute), 4)} {
			if err := b.Event(e); err != nil {
				return err
			}
		}
		return nil
	})
	want := []roll{{User: "alice", Alloc: 6 * 5400, Used: 1800, Jobs: 1}}
	for _, tbl := range []string{"rollup_hourly", "rollup_hourly_sum", "rollup_daily", "rollup_monthly"} {
		if diff := cmp.Diff(want, rollups(t, s, tbl)); diff != "" {
			t.Errorf("%s after events (-want +got):\n%s", tbl, diff)
		}
	}
	var hours int
	s.db.QueryRow(`SELECT count(DISTINCT hour) FROM rollup_hourly WHERE alloc_gpu_s > 0`).Scan(&hours)
	if hours != 2 {
		t.Errorf("a job from 10:30 to 12:00 spans %d hours in the rollup, want 2", hours)
	}
	var job int64
	s.db.QueryRow(`SELECT id FROM jobs WHERE job_id = 5`).Scan(&job)
	batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, true, "benchmark run") })
	want[0].Ignored = true
	for _, tbl := range []string{"rollup_hourly", "rollup_hourly_sum", "rollup_daily", "rollup_monthly"} {
		if diff := cmp.Diff(want, rollups(t, s, tbl)); diff != "" {
			t.Errorf("%s after ignore (-want +got):\n%s", tbl, diff)
		}
	}
	batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, false, "") })
	want[0].Ignored = false
	for _, tbl := range []string{"rollup_hourly", "rollup_hourly_sum", "rollup_daily", "rollup_monthly"} {
		if diff := cmp.Diff(want, rollups(t, s, tbl)); diff != "" {
			t.Errorf("%s after unignore (-want +got):\n%s", tbl, diff)
		}
	}
	var nodes string
	var gpus int
	s.db.QueryRow(`SELECT nodes, gpus FROM jobs WHERE id = ?`, job).Scan(&nodes, &gpus)
	if nodes != "n1,n2" || gpus != 6 {
		t.Errorf("job nodes %q gpus %d", nodes, gpus)
	}
}
