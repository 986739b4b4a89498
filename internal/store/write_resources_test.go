package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestResourcesNotRecordedIsNotZero: a run of a site without a gather
// plugin reads back with CPU time and RSS not known, a measured 0 reads
// back as a known 0, a later answer replaces the earlier one, and a run
// sacct never answered for is absent.
func TestResourcesNotRecordedIsNotZero(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		for i, node := range []string{"n1", "n2", "n3"} {
			e := ev(record.JobStart, node, t0, 1)
			e.Job.ID = uint64(10 + i)
			e.Key = record.EventKey("c", e.Job.ID, 0, node, record.JobStart)
			if err := b.Event(e); err != nil {
				return err
			}
		}
		return nil
	})
	none := Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 90 * time.Second, ReqMem: Known(1 << 30)}
	zero := Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 90 * time.Second, TimeLimit: Known(0), ReqMem: Known(0), TotalCPU: Known(0), MaxRSS: Known(0)}
	first := Resources{AllocCPUs: 1, Nodes: 1, Elapsed: time.Second, TotalCPU: Known(1)}
	later := Resources{AllocCPUs: 8, Nodes: 2, Elapsed: time.Hour, TimeLimit: Known(7200), ReqMem: Known(4 << 30), TotalCPU: Known(1_800_000), MaxRSS: Known(3 << 30)}
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		for _, w := range []struct {
			row int64
			u   Resources
		}{{1, none}, {2, zero}, {3, first}, {3, later}} {
			if err := b.SetResources(w.row, w.u); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.Resources(context.Background(), []int64{1, 2, 3, 99})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]Resources{1: none, 2: zero, 3: later}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("resources read back (-want +got):\n%s", d)
	}
	if _, err := s.Resources(context.Background(), make([]int64, MaxResourceRows+1)); err == nil {
		t.Errorf("Resources of %d runs: no error, want the bound refused", MaxResourceRows+1)
	}
}

// TestEfficiency holds the seff formulas: CPU = TotalCPU / (AllocCPUS ×
// Elapsed), memory = MaxRSS / ReqMem per node, time = Elapsed / limit; a
// share of a figure not recorded, or of a whole of 0, is not known.
func TestEfficiency(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    Resources
		want Efficiency
	}{
		{"one of four cores, half the memory, a quarter of the time",
			Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 100 * time.Second, TimeLimit: Known(400), ReqMem: Known(2 << 30), TotalCPU: Known(100_000), MaxRSS: Known(1 << 30)},
			Efficiency{CPU: Ratio{0.25, true}, Memory: Ratio{0.5, true}, Time: Ratio{0.25, true}}},
		{"not recorded (jobacct_gather/none), unlimited",
			Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 100 * time.Second, ReqMem: Known(2 << 30)},
			Efficiency{}},
		{"measured zero is a known zero",
			Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 100 * time.Second, TimeLimit: Known(100), ReqMem: Known(2 << 30), TotalCPU: Known(0), MaxRSS: Known(0)},
			Efficiency{CPU: Ratio{0, true}, Memory: Ratio{0, true}, Time: Ratio{1, true}}},
		{"no memory asked, no time elapsed",
			Resources{AllocCPUs: 4, Nodes: 1, TimeLimit: Known(60), ReqMem: Known(0), TotalCPU: Known(5), MaxRSS: Known(7)},
			Efficiency{Time: Ratio{0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.u.Efficiency()); d != "" {
				t.Errorf("Efficiency (-want +got):\n%s", d)
			}
		})
	}
}

// TestAsk: what a run far off its allocation would do with, the one
// arithmetic gpuacct job and the job's end mail both word.
func TestAsk(t *testing.T) {
	const gib = 1 << 30
	for _, tt := range []struct {
		name string
		u    Resources
		want Ask
	}{
		{"far off in all", Resources{AllocCPUs: 8, Elapsed: time.Hour, TimeLimit: Known(24 * 3600), ReqMem: Known(64 * gib),
			TotalCPU: Known(2 * 3600 * 1000), MaxRSS: Known(10 * gib)}, Ask{Cores: 3, Busy: 2, Mem: "12G", Time: "01:15:00"}},
		{"under a GiB, under an hour", Resources{AllocCPUs: 1, Elapsed: 10 * time.Minute, TimeLimit: Known(3600), ReqMem: Known(4 * gib),
			TotalCPU: Known(60 * 1000), MaxRSS: Known(500 << 20)}, Ask{Mem: "600M", Time: "00:15:00"}},
		{"days", Resources{AllocCPUs: 2, Elapsed: 30 * time.Hour, TimeLimit: Known(7 * 24 * 3600)}, Ask{Time: "1-12:00:00"}},
		{"near its allocation", Resources{AllocCPUs: 4, Elapsed: time.Hour, TimeLimit: Known(5400), ReqMem: Known(8 * gib),
			TotalCPU: Known(3 * 3600 * 1000), MaxRSS: Known(6 * gib)}, Ask{}},
		{"not recorded", Resources{AllocCPUs: 4, Elapsed: time.Hour}, Ask{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, tt.u.Ask()); d != "" {
				t.Errorf("Ask (-want +got):\n%s", d)
			}
		})
	}
}
