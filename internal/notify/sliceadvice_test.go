package notify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// SliceFit names the smallest profile below what a run held that its
// memory peak (with migMargin to spare) and its utilization of what it
// held (in slices) fit.
func TestSliceFit(t *testing.T) {
	tests := []struct {
		name              string
		model             string
		total, peak, util float64
		want              string
		wantOK            bool
	}{
		{"whole A100 80GB, 6 GiB, 10 %", "NVIDIA A100-SXM4-80GB", 81920, 6144, 10, "1g.10gb", true},
		{"whole A100 80GB, 6 GiB, 20 %: 1.4 slices", "NVIDIA A100-SXM4-80GB", 81920, 6144, 20, "2g.20gb", true},
		{"whole A100 40GB, 6 GiB, 10 %: past 1g.5gb", "NVIDIA A100-SXM4-40GB", 40960, 6144, 10, "2g.10gb", true},
		{"whole H100, 30 GiB, 40 %", "NVIDIA H100 80GB HBM3", 81559, 30 * 1024, 40, "3g.40gb", true},
		{"whole H100 NVL by memory", "NVIDIA H100 NVL", 95830, 10 * 1024, 5, "1g.12gb", true},
		{"whole H200, 60 GiB, 90 %: needs it all", "NVIDIA H200", 143771, 60 * 1024, 90, "", false},
		{"whole H100, 75 GiB: no slice holds it", "NVIDIA H100 80GB HBM3", 81559, 75 * 1024, 5, "", false},
		{"3g.40gb slice at 8 %, 4 GiB", "NVIDIA A100-SXM4-80GB MIG 3g.40gb", 0, 4096, 8, "1g.10gb", true},
		{"3g.40gb slice at 50 %: 1.5 slices", "NVIDIA A100-SXM4-80GB MIG 3g.40gb", 0, 4096, 50, "2g.20gb", true},
		{"3g.40gb slice at 90 %", "NVIDIA A100-SXM4-80GB MIG 3g.40gb", 0, 4096, 90, "", false},
		{"H100 NVL slice by its profile", "NVIDIA H100 NVL MIG 3g.47gb", 0, 4096, 10, "1g.12gb", true},
		{"1g slice: nothing smaller", "NVIDIA A100-SXM4-80GB MIG 1g.10gb", 0, 1024, 1, "", false},
		{"memory at the margin does not fit", "NVIDIA A100-SXM4-80GB MIG 2g.20gb", 0, 10 * 1e9 / (1 << 20) * migMargin, 1, "", false},
		{"no MIG on this model", "NVIDIA GeForce RTX 4090", 24564, 1024, 1, "", false},
		{"an unknown profile", "NVIDIA A100-SXM4-80GB MIG 5g.50gb", 0, 1024, 1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SliceFit(tt.model, tt.total, tt.peak, tt.util)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("SliceFit(%q, %v, %v, %v) = %q, %v; want %q, %v", tt.model, tt.total, tt.peak, tt.util, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// A run on one MIG slice is told the smaller slice it fits, by its own
// slice's utilization; with no utilization known for the slice, nothing.
func TestSliceAdvice(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	const model = "NVIDIA A100-SXM4-80GB MIG 3g.40gb"
	row := func(peak, utilMax, utilS float64) store.JobGPURow {
		return store.JobGPURow{UUID: "MIG-x", Model: model, SampleS: 1000, UtilS: utilS, UtilMax: f(utilMax), MemMaxMiB: f(peak), MemTotalMiB: f(40192)}
	}
	base := Advice{Job: "9", Cluster: "c", GPUs: 1}
	tests := []struct {
		name   string
		g      store.JobGPURow
		want   Advice
		wantOK bool
	}{
		{"small", row(4096, 20, 80), Advice{Kind: AdviceSlice, Job: "9", Cluster: "c", GPUs: 1, PeakMiB: 4096, UtilPct: 8, Model: "3g.40gb", Slice: "1g.10gb"}, true},
		{"busy", row(4096, 100, 900), Advice{}, false},
		{"utilization unknown", row(4096, 0, 0), Advice{}, false},
		{"memory too big", row(30000, 20, 80), Advice{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sliceAdvice(base, tt.g, "3g.40gb")
			if d := cmp.Diff(tt.want, got); d != "" || ok != tt.wantOK {
				t.Errorf("ok %v (want %v), advice (-want +got):\n%s", ok, tt.wantOK, d)
			}
		})
	}
	var b strings.Builder
	writeAdvice(&b, []Advice{tests[0].want}, "en")
	want := "\nAdvice from your week's jobs:\n" +
		"  job 9 (c): used 4.0 GiB of GPU memory at most and 8.0 % of its MIG slice 3g.40gb;\n" +
		"    it would fit the smaller slice 1g.10gb: ask for that one (--gres=gpu:1g.10gb:1).\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("digest text (-want +got):\n%s", d)
	}
}
