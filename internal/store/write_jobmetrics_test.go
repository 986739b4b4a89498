package store

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestJobMetrics: a job's chosen metrics and power per GPU are weighted
// by the part of each sample inside its allocation (a 0.2 s profile
// sample weighs 0.2 s), counted once however often a segment comes, and
// follow the allocation when its end moves in (peaks of samples no longer
// inside are gone). A metric the GPU cannot give is said with its reason.
func TestJobMetrics(t *testing.T) {
	s := openAt(t, ledgerdb.NewLedger(t), false)
	defer s.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	uuid := "GPU-00000000-0000-0000-0000-000000000000"
	start := &record.Event{Schema: record.EventSchema, Kind: record.JobStart, Time: t0, Cluster: "c", Node: "n1",
		GPUs: []record.GPU{{UUID: uuid, Index: new(0)}}}
	start.Job.ID, start.Job.User, start.Job.GPUs = 5, "alice", []int{0}
	start.Key = record.EventKey("c", 5, 0, "n1", record.JobStart)
	sample := func(at time.Time, sm float64, w uint32) record.Sample {
		return record.Sample{Time: at, UUID: uuid, Jobs: []record.JobShare{{Job: 5, Share: 1}}, PowerMW: &w,
			Metrics: map[string]float64{"sm_active_pct": sm}}
	}
	// 11 samples 10 s apart from 5 s before the start (half of the first
	// one inside), then 10 profile samples 0.2 s apart.
	var normal, profile []record.Sample
	for i := range 11 {
		normal = append(normal, sample(t0.Add(time.Duration(10*i-5)*time.Second), 50, 300_000))
	}
	for i := range 10 {
		profile = append(profile, sample(t0.Add(105*time.Second+time.Duration(i)*200*time.Millisecond), 100, 600_000))
	}
	seg := func(seq uint64, iv float64) *record.SegmentHeader {
		return &record.SegmentHeader{Schema: record.SegmentSchema, Cluster: "c", Node: "n1", Seq: seq, Interval: iv, Start: t0,
			Key: record.SegmentKey("c", "n1", seq), Metrics: []string{"sm_active_pct", "fp64_active_pct"},
			Unsupported: map[string][]string{uuid: {"fp64_active_pct: GPM not supported by this GPU"}}}
	}
	now := t0.Add(time.Hour)
	batchOf(t, s, now, func(b *Batch) error { return b.Event(start) })
	for range 2 { // the second time, every sample is stored already
		batchOf(t, s, now, func(b *Batch) error {
			if _, err := b.Segment(seg(1, 10), normal); err != nil {
				return err
			}
			_, err := b.Segment(seg(2, 0.2), profile)
			return err
		})
	}
	read := func() []JobMetricRow {
		t.Helper()
		j, err := s.Run(ctx, RunQuery{Cluster: "c", JobID: 5})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := s.JobMetrics(ctx, j.Row)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ms {
			ms[i].GPUID = 0
		}
		return ms
	}
	p := func(v float64) *float64 { return &v }
	approx := cmpopts.EquateApprox(0, 1e-9)
	want := []JobMetricRow{
		{Name: "fp64_active_pct", Unsupported: "GPM not supported by this GPU"},
		{Name: "power_w", Samples: 21, Seconds: 107, ValueS: 105*300 + 2*600, Peak: p(600)},
		{Name: "sm_active_pct", Samples: 21, Seconds: 107, ValueS: 105*50 + 2*100, Peak: p(100)},
	}
	if d := cmp.Diff(want, read(), approx); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	// The job ended 50 s in: the sample at 45 s keeps half of its
	// window, the later ones and the profile's none.
	end := &record.Event{Schema: record.EventSchema, Kind: record.JobEnd, Time: t0.Add(50 * time.Second), Cluster: "c", Node: "n1",
		GPUs: start.GPUs}
	end.Job = start.Job
	end.Key = record.EventKey("c", 5, 0, "n1", record.JobEnd)
	batchOf(t, s, now, func(b *Batch) error { return b.Event(end) })
	want = []JobMetricRow{
		{Name: "fp64_active_pct", Unsupported: "GPM not supported by this GPU"},
		{Name: "power_w", Samples: 6, Seconds: 50, ValueS: 50 * 300, Peak: p(300)},
		{Name: "sm_active_pct", Samples: 6, Seconds: 50, ValueS: 50 * 50, Peak: p(50)},
	}
	if d := cmp.Diff(want, read(), approx); d != "" {
		t.Errorf("metrics after the end moved in (-want +got):\n%s", d)
	}
	if m := read()[2]; math.Abs(m.ValueS/m.Seconds-50) > 1e-9 {
		t.Errorf("mean %v, want 50", m.ValueS/m.Seconds)
	}
}
