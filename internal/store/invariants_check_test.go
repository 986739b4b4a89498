package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestHourViolations: a batch names the job hours it touched; a job hour
// poked to idle over allocated is found among them and counted in the
// ledger, and hours not asked about are not reported.
func TestHourViolations(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 3, 29, 10, 0, 0, 0, time.UTC).UnixMilli()
	now := time.UnixMilli(base + 3*msPerHour)
	j := &invJob{id: 7, gpus: []int{0, 1}, start: base + 30*60_000, end: base + 90*60_000, ivMS: 10_000}
	for t := j.start + 1000; t < j.end; t += j.ivMS {
		for _, g := range j.gpus {
			j.samples = append(j.samples, invSample{gpu: g, t: t, util: 50, idle: true})
		}
	}
	s := openTemp(t)
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []record.Kind{record.JobStart, record.JobEnd} {
		at := j.start
		if k == record.JobEnd {
			at = j.end
		}
		if err := b.Event(j.event(k, at)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Segment(j.segment(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	touched := b.TouchedHours()
	h0 := base / msPerHour
	if len(touched) != 2 || touched[0].Hour != h0 || touched[1].Hour != h0+1 {
		t.Fatalf("touched hours: %+v, want the job's two hours %d and %d", touched, h0, h0+1)
	}
	check := func(name string, hours []JobHour, want []string, wantCount int64) {
		t.Helper()
		vs, err := s.HourViolations(ctx, hours, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range vs {
			got = append(got, v.String())
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: violations (-want +got):\n%s", name, d)
		}
		n, over, err := s.CountHourViolations(ctx, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n != wantCount || over {
			t.Errorf("%s: count %d (over %t), want %d", name, n, over, wantCount)
		}
	}
	check("as ingested", touched, nil, 0)
	// The allocation of the second hour is 2 GPUs × 30 min.
	if _, err := s.db.Exec(`UPDATE job_hours SET idle_gpu_s = alloc_gpu_s + 5 WHERE hour = ?`, h0+1); err != nil {
		t.Fatal(err)
	}
	bad := "job 7 (restart 0) of c on n0, hour 2026-03-29 11h UTC: allocated 3600 GPU-s, used 1800.000, idle 3605.000, sampled 3600.000"
	check("idle poked over allocated", touched, []string{bad}, 1)
	check("other hours asked", touched[:1], nil, 1)
	check("nothing asked", nil, nil, 1)
	// Within the float tolerance is no violation.
	if _, err := s.db.Exec(`UPDATE job_hours SET idle_gpu_s = alloc_gpu_s + 1e-7 WHERE hour = ?`, h0+1); err != nil {
		t.Fatal(err)
	}
	check("within tolerance", touched, nil, 0)
	// The count is bounded.
	if _, err := s.db.Exec(`UPDATE job_hours SET sample_s = alloc_gpu_s + 1`); err != nil {
		t.Fatal(err)
	}
	n, over, err := s.CountHourViolations(ctx, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || !over {
		t.Errorf("bounded count: %d (over %t), want 1 and over", n, over)
	}
	// Only the newest job runs are read: here none.
	if n, over, err := s.CountHourViolations(ctx, 0, 10); err != nil || n != 0 || over {
		t.Errorf("count over no job run: %d (over %t, %v), want 0", n, over, err)
	}
}
