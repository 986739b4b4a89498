package report

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// A one-GPU or one-slice run is told the smaller slice it fits; a run
// whose utilization is unknown (a slice without GPM), of several GPUs,
// or too big for any slice is told nothing.
func TestSliceNotes(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	var zero int64
	gpu := func(model string, total, peak, mean, max float64) GPUStat {
		return GPUStat{Node: "gpu05", Index: &zero, Model: model, SampleS: 600, MemTotalMiB: f(total), MemMaxMiB: f(peak), UtilMean: f(mean), UtilMax: f(max)}
	}
	tests := []struct {
		name string
		gpus []GPUStat
		want []string
	}{
		{"whole A100, small", []GPUStat{gpu("NVIDIA A100-SXM4-80GB", 81920, 6144, 20, 35)},
			[]string{"GPU 0 on gpu05 peaked at 6.0 GiB of memory and 20% utilization: a MIG slice 2g.20gb would do (--gres=gpu:2g.20gb:1)."}},
		{"3g.40gb slice, small", []GPUStat{gpu("NVIDIA H100 80GB HBM3 MIG 3g.40gb", 40192, 4096, 8, 15)},
			[]string{"MIG slice 3g.40gb on gpu05 peaked at 4.0 GiB of memory and 8% utilization: a MIG slice 1g.10gb would do (--gres=gpu:1g.10gb:1)."}},
		{"slice without utilization", []GPUStat{gpu("NVIDIA A100-SXM4-80GB MIG 3g.40gb", 40192, 4096, 0, 0)}, nil},
		{"busy whole GPU", []GPUStat{gpu("NVIDIA A100-SXM4-80GB", 81920, 6144, 95, 100)}, nil},
		{"two GPUs", []GPUStat{gpu("NVIDIA A100-SXM4-80GB", 81920, 6144, 10, 20), gpu("NVIDIA A100-SXM4-80GB", 81920, 6144, 10, 20)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			det := &Detail{GPUs: tt.gpus}
			det.Job.GPUs = int64(len(tt.gpus))
			if d := cmp.Diff(tt.want, sliceNotes(det)); d != "" {
				t.Errorf("notes (-want +got):\n%s", d)
			}
		})
	}
}

// TestJobListFits: on a site with MIG, `gpuacct jobs` gives each run of
// one GPU or slice the smaller slice it would fit (FITS), read for the
// whole list at once: alice's whole A100 at 20 % and 6 GiB fits a
// 2g.20gb, carol's 3g.40gb at 8 % and 4 GiB a 1g.10gb; bob's 1g.10gb has
// none smaller, and a run without an aggregate gets "-".
func TestJobListFits(t *testing.T) {
	loc := slicedLedgerWith(t, func(b *store.Batch, start time.Time) {
		for _, a := range []struct {
			job        uint64
			uuid       string
			util, peak float64 // mean %, MiB
		}{{10, "GPU-n1-0", 20, 6144}, {12, "MIG-n1-1-3g.40gb", 8, 4096}} {
			err := b.JobGPU(&record.JobGPU{Schema: record.JobGPUSchema, Key: record.JobGPUKey("c1", a.job, 0, "n1", a.uuid), Seq: 1, Final: true,
				Cluster: "c1", Node: "n1", Job: a.job, UUID: a.uuid, First: start, Last: start.Add(time.Hour - time.Second),
				Samples: 3600, SampleSeconds: 3600, UtilSeconds: 36 * a.util, UtilMax: uint32(2 * a.util), MemMaxMiB: uint64(a.peak), MemTotalMiB: 81920})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	ctx := context.Background()
	start := time.Unix(t0, 0).UTC()
	db := openTest(t, loc)
	tb, err := db.JobList(ctx, JobsQuery{Window: AllTime(start.Add(4 * time.Hour)), Now: start.Add(4 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if last := tb.Columns[len(tb.Columns)-1].Key; last != "mig_fit" {
		t.Fatalf("last column %q, want mig_fit", last)
	}
	got := map[string]any{}
	for _, r := range tb.Rows {
		got[r.Cells[0].(string)] = r.Cells[len(r.Cells)-1]
	}
	want := map[string]any{"10": "2g.20gb", "11": "-", "12": "1g.10gb"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("FITS by job (-want +got):\n%s", d)
	}
}
