package report

import "github.com/aicloud/gpusuite/internal/report/table"

// Slurm counts a MIG slice as one gres/gpu, and so does ALLOC (equal to
// sacct and sreport). GPU-EQ weighs each slice by its share of its GPU
// (a 1g.10gb on an A100 is 1/7), so that sliced and whole use compare;
// a report shows it only when its facts hold a slice, and a site without
// MIG sees the report it saw before.
var gpuEqColumn = table.Column{Key: "gpu_equivalent", Title: "GPU-EQ", Kind: table.GPUSeconds}

const gpuEqNote = "GPU-EQ = allocated GPU-time with each MIG slice counted as its share of its GPU (1g.10gb of an A100: 1/7); ALLOC counts a slice as one GPU, as Slurm's gres/gpu does"

// gpuEqSeconds is x's allocated GPU-time in whole-GPU equivalents; it
// sets *sliced when x is a MIG slice's (its model names a profile).
func gpuEqSeconds(x *Fact, sliced *bool) float64 {
	n, of, ok := MIGProfile(x.Model)
	if !ok {
		return float64(x.AllocS)
	}
	*sliced = true
	return float64(x.AllocS) * float64(n) / float64(of)
}
