package report

import (
	"strings"

	"github.com/aicloud/gpusuite/internal/record"
)

// MIGProfile reads a MIG profile from a Slurm gres type: "1g.10gb" as a
// gres.conf names it, "nvidia_a100-sxm4-40gb_1g.10gb" as AutoDetect=nvml
// does, "+me" media extensions included; or from a ledger model, NVML's
// name of the instance ("NVIDIA A100-SXM4-80GB MIG 1g.10gb"), read by
// record.ParseMIGProfile. Slices is the number before "g" (compute
// slices), or before "c" for a compute instance (1c.3g.40gb holds one);
// Of the slices of the whole GPU: 4 on an A30 (6 GB a slice), 7 on the
// A100, H100 and H200. ok is false for a type that names no MIG profile
// (a100, t4).
func MIGProfile(gresType string) (slices, of int, ok bool) {
	p := gresType
	if i := strings.LastIndexAny(p, "_ "); i >= 0 {
		p = p[i+1:]
	}
	prof, ok := record.ParseMIGProfile(p)
	if !ok {
		return 0, 0, false
	}
	n, of := prof.Slices, 7
	if prof.GB == 6*n && n <= 4 && n != 3 { // A30: 1g.6gb, 2g.12gb, 4g.24gb
		of = 4
	}
	if prof.Compute != 0 { // a compute instance holds c of its GPU instance's slices
		n = prof.Compute
	}
	return n, of, true
}

// GPUEquivalent is the share of a whole GPU a gres of type gresType is:
// 1 for a whole GPU, slices/of for a MIG slice (a 1g.10gb on an A100 is
// 1/7), so that sliced and whole use compare.
func GPUEquivalent(gresType string) float64 {
	n, of, ok := MIGProfile(gresType)
	if !ok {
		return 1
	}
	return float64(n) / float64(of)
}
