package report

import "testing"

// TestMIGProfile: a gres type is a MIG profile when it ends in Ng.Mgb
// (gres.conf's own name, AutoDetect's prefixed one, "+me"); its
// GPU-equivalent is its slices over the whole GPU's (7, or 4 on an A30),
// and a whole GPU's is 1.
func TestMIGProfile(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		slices   int
		of       int
		ok       bool
		gpuEquiv float64
	}{
		{"1g.10gb", 1, 7, true, 1.0 / 7},
		{"3g.40gb", 3, 7, true, 3.0 / 7},
		{"7g.80gb", 7, 7, true, 1},
		{"nvidia_a100-sxm4-40gb_2g.10gb", 2, 7, true, 2.0 / 7},
		{"1g.10gb+me", 1, 7, true, 1.0 / 7},
		{"NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb", 1, 7, true, 1.0 / 7},
		{"2c.4g.24gb", 2, 4, true, 2.0 / 4},
		{"NVIDIA A100-SXM4-80GB MIG 3g.40gb", 3, 7, true, 3.0 / 7},
		{"NVIDIA A30 MIG 2g.12gb", 2, 4, true, 2.0 / 4},
		{"NVIDIA A100-SXM4-80GB", 0, 0, false, 1},
		{"1g.18gb", 1, 7, true, 1.0 / 7},
		{"1g.6gb", 1, 4, true, 1.0 / 4},
		{"4g.24gb", 4, 4, true, 1},
		{"a100", 0, 0, false, 1},
		{"t4", 0, 0, false, 1},
		{"", 0, 0, false, 1},
		{"8g.80gb", 0, 0, false, 1},
		{"1g.gb", 0, 0, false, 1},
		{"10g.10gb", 0, 0, false, 1},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			n, of, ok := MIGProfile(tc.typ)
			if n != tc.slices || of != tc.of || ok != tc.ok {
				t.Errorf("MIGProfile(%q) = %d, %d, %v; want %d, %d, %v", tc.typ, n, of, ok, tc.slices, tc.of, tc.ok)
			}
			if got := GPUEquivalent(tc.typ); got != tc.gpuEquiv {
				t.Errorf("GPUEquivalent(%q) = %v; want %v", tc.typ, got, tc.gpuEquiv)
			}
		})
	}
}
