package store

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// reconcileDump is every figure a reconciliation may move: the job, its
// nodes, its hours, and the rollups' sums by hour, day and month.
func reconcileDump(t *testing.T, s *Ledger) map[string][]string {
	t.Helper()
	return map[string][]string{
		"jobs": dump(t, s.db, `SELECT job_id, start, end, state, exit_code, end_source, end_estimated, start_estimated, sacct_checked, alloc_gpu_s, used_gpu_s FROM jobs ORDER BY id`),
		"job_nodes": dump(t, s.db, `SELECT n.name, jn.start, jn.end, jn.start_source, jn.end_source, jn.exit_code, jn.quality, jn.s_lo, jn.s_hi
 FROM job_nodes jn JOIN nodes n ON n.id = jn.node_id ORDER BY n.name`),
		"job_hours":      dump(t, s.db, `SELECT hour, sum(alloc_gpu_s), sum(used_gpu_s), sum(sample_s), sum(jobs) FROM job_hours GROUP BY hour HAVING sum(alloc_gpu_s) != 0 OR sum(sample_s) != 0 ORDER BY hour`),
		"rollup_hourly":  dump(t, s.db, `SELECT hour, sum(alloc_gpu_s), sum(used_gpu_s), sum(jobs) FROM rollup_hourly GROUP BY hour HAVING sum(alloc_gpu_s) != 0 OR sum(used_gpu_s) != 0 ORDER BY hour`),
		"rollup_daily":   dump(t, s.db, `SELECT day, sum(alloc_gpu_s), sum(used_gpu_s), sum(jobs) FROM rollup_daily GROUP BY day HAVING sum(alloc_gpu_s) != 0 OR sum(used_gpu_s) != 0 ORDER BY day`),
		"rollup_monthly": dump(t, s.db, `SELECT month, sum(alloc_gpu_s), sum(used_gpu_s), sum(jobs) FROM rollup_monthly GROUP BY month HAVING sum(alloc_gpu_s) != 0 OR sum(used_gpu_s) != 0 ORDER BY month`),
	}
}

// TestReconcileMovesEveryFigure: a job on two nodes whose prolog ran 3 s
// after Slurm's start and whose epilog ran 34 s after Slurm's end takes
// Slurm's times; its allocation (GPUs × Slurm's elapsed seconds) and its
// samples, cut at Slurm's end, move in the job, its hours and every
// rollup; taking the same times again changes nothing.
func TestReconcileMovesEveryFigure(t *testing.T) {
	s := openTemp(t)
	slurmStart := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	slurmEnd := time.Date(2026, 3, 2, 11, 59, 30, 0, time.UTC)
	now := slurmEnd.Add(time.Hour)
	util := uint32(50)
	eventsOf(t, s, now, ev(record.JobStart, "n1", slurmStart.Add(3*time.Second), 2), ev(record.JobStart, "n2", slurmStart.Add(3*time.Second), 4))
	// A minute's sample from 10:31 to 11:59 on one GPU of n1: the last
	// one reaches past Slurm's end by 30 s.
	batchOf(t, s, now, func(b *Batch) error {
		var ss []record.Sample
		for i := 1; i < 90; i++ {
			ss = append(ss, record.Sample{Time: slurmStart.Add(time.Duration(i) * time.Minute), UUID: "GPU-00000000-0000-0000-0000-000000000001",
				GPUUtil: &util, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
		}
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 60}, ss)
		return err
	})
	eventsOf(t, s, now, ev(record.JobEnd, "n1", slurmEnd.Add(34*time.Second), 2), ev(record.JobEnd, "n2", slurmEnd.Add(34*time.Second), 4))
	todo := unreconciled(t, s, now)
	if len(todo) != 1 || todo[0].JobID != 5 || !todo[0].Start.Equal(slurmStart.Add(3*time.Second)) || !todo[0].End.Equal(slurmEnd.Add(34*time.Second)) || todo[0].StartEstimated {
		t.Fatalf("Unreconciled = %+v, want job 5 with its hooks' times", todo)
	}
	code, sig := 3, 0
	times := SlurmTimes{Start: slurmStart, End: slurmEnd, State: "FAILED", ExitCode: &code, ExitSignal: &sig}
	batchOf(t, s, now, func(b *Batch) error { return b.Reconcile(todo[0].Row, times) })

	start, end := slurmStart.Unix(), slurmEnd.Unix()
	h10, h11 := start/3600, start/3600+1
	// 88 whole minutes at 50 % and the last one's 30 s before the end.
	used := "2655"
	want := map[string][]string{
		"jobs": {"5|" + i2s(start) + "|" + i2s(end) + "|failed|3|sacct|0|0|1|" + i2s(6*(end-start)) + "|" + used},
		"job_nodes": {
			"n1|" + i2s(start) + "|" + i2s(end) + "|sacct|sacct|3|times_from_sacct|" + i2s(start*1000) + "|" + i2s(end*1000),
			"n2|" + i2s(start) + "|" + i2s(end) + "|sacct|sacct|3|times_from_sacct|NULL|NULL",
		},
		"job_hours": {
			i2s(h10) + "|" + i2s(6*1800) + "|870|1740|1",
			i2s(h11) + "|" + i2s(6*(end-h11*3600)) + "|1785|3570|0",
		},
		"rollup_hourly":  {i2s(h10) + "|" + i2s(6*1800) + "|870|1", i2s(h11) + "|" + i2s(6*(end-h11*3600)) + "|1785|0"},
		"rollup_daily":   {i2s(h10/24) + "|" + i2s(6*(end-start)) + "|" + used + "|1"},
		"rollup_monthly": {i2s(MonthOfDay(h10/24)) + "|" + i2s(6*(end-start)) + "|" + used + "|1"},
	}
	got := reconcileDump(t, s)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after Slurm's times (-want +got):\n%s", diff)
	}
	if left := unreconciled(t, s, now); len(left) != 0 {
		t.Errorf("Unreconciled after the reconciliation = %+v, want none", left)
	}
	// Again, and a late copy of the epilog's end: nothing moves.
	batchOf(t, s, now, func(b *Batch) error { return b.Reconcile(todo[0].Row, times) })
	eventsOf(t, s, now, ev(record.JobEnd, "n1", slurmEnd.Add(34*time.Second), 2))
	if diff := cmp.Diff(got, reconcileDump(t, s)); diff != "" {
		t.Errorf("a second reconciliation moved figures (-first +second):\n%s", diff)
	}
}

// TestReconcileGiveUp: a run sacct never knew keeps its hooks' times and
// their source, and is not listed again.
func TestReconcileGiveUp(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	now := t0.Add(48 * time.Hour)
	eventsOf(t, s, now,
		evJob(record.JobStart, "n1", t0, 1, 7), evJob(record.JobEnd, "n1", t0.Add(time.Hour), 1, 7),
		evJob(record.JobStart, "n1", t0, 1, 8)) // still running: not listed
	todo := unreconciled(t, s, now)
	if len(todo) != 1 || todo[0].JobID != 7 {
		t.Fatalf("Unreconciled = %+v, want the finished job 7 only", todo)
	}
	batchOf(t, s, now, func(b *Batch) error { return b.GiveUpReconcile(todo[0].Row) })
	batchOf(t, s, now, func(b *Batch) error {
		left, err := b.Unreconciled(0, 10)
		if err == nil && len(left) != 0 {
			t.Errorf("Unreconciled after giving up = %+v, want none", left)
		}
		w, d, g, err := b.ReconcileCounts()
		if err == nil && (w != 0 || d != 0 || g != 1) {
			t.Errorf("ReconcileCounts = %d waiting, %d done, %d given up; want 0, 0, 1", w, d, g)
		}
		return err
	})
	want := []string{"7|epilog|2|3600", "8|NULL|0|NULL"}
	if diff := cmp.Diff(want, dump(t, s.db, `SELECT job_id, end_source, sacct_checked, CASE WHEN end IS NULL THEN NULL ELSE alloc_gpu_s END FROM jobs ORDER BY job_id`)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

func i2s(v int64) string { return strconv.FormatInt(v, 10) }

// eventsOf writes es in one batch at now.
func eventsOf(t *testing.T, s *Ledger, now time.Time, es ...*record.Event) {
	t.Helper()
	batchOf(t, s, now, func(b *Batch) error {
		for _, e := range es {
			if err := b.Event(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// unreconciled is what Unreconciled lists at now (100 runs at most).
func unreconciled(t *testing.T, s *Ledger, now time.Time) []Unreconciled {
	t.Helper()
	var todo []Unreconciled
	batchOf(t, s, now, func(b *Batch) error {
		var err error
		todo, err = b.Unreconciled(0, 100)
		return err
	})
	return todo
}

// TestReconcileLateNode: a node of a reconciled run whose events come
// late has the run asked again, and takes Slurm's times; a late copy of
// a reconciled node's own event does not.
func TestReconcileLateNode(t *testing.T) {
	s := openTemp(t)
	slurmStart := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	slurmEnd := slurmStart.Add(time.Hour)
	now := slurmEnd.Add(time.Hour)
	eventsOf(t, s, now, ev(record.JobStart, "n1", slurmStart.Add(2*time.Second), 2), ev(record.JobEnd, "n1", slurmEnd.Add(5*time.Second), 2))
	todo := unreconciled(t, s, now)
	if len(todo) != 1 {
		t.Fatalf("Unreconciled = %+v, want the job", todo)
	}
	times := SlurmTimes{Start: slurmStart, End: slurmEnd, State: "COMPLETED"}
	batchOf(t, s, now, func(b *Batch) error { return b.Reconcile(todo[0].Row, times) })
	eventsOf(t, s, now, ev(record.JobEnd, "n1", slurmEnd.Add(5*time.Second), 2))
	if left := unreconciled(t, s, now); len(left) != 0 {
		t.Errorf("a late copy of a reconciled node's end: Unreconciled = %+v, want none", left)
	}
	eventsOf(t, s, now, ev(record.JobStart, "n2", slurmStart.Add(3*time.Second), 1), ev(record.JobEnd, "n2", slurmEnd.Add(4*time.Second), 1))
	todo = unreconciled(t, s, now)
	if len(todo) != 1 {
		t.Fatalf("after a late node: Unreconciled = %+v, want the job again", todo)
	}
	batchOf(t, s, now, func(b *Batch) error { return b.Reconcile(todo[0].Row, times) })
	got := reconcileDump(t, s)["job_nodes"]
	for _, line := range got {
		if !strings.Contains(line, "|"+i2s(slurmStart.Unix())+"|"+i2s(slurmEnd.Unix())+"|sacct|sacct|") {
			t.Errorf("job node %s: want Slurm's times", line)
		}
	}
	if len(got) != 2 {
		t.Errorf("job nodes %v, want n1 and n2", got)
	}
}
