package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
