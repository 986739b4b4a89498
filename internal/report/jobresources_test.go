package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// TestResourceLines: a run's CPU, memory, time and GPU figures in words,
// with a suggestion only where the run used far less than it asked for,
// and "not recorded" (never 0) for what a site without a gather plugin
// does not measure.
func TestResourceLines(t *testing.T) {
	const gib = 1 << 30
	idx := func(n int64) *int64 { return &n }
	f := func(v float64) *float64 { return &v }
	gpu := func(i int64, idle float64) GPUStat {
		return GPUStat{Node: "n1", Index: idx(i), SampleS: 100, IdleS: idle, MemMaxMiB: f(20 * 1024), MemTotalMiB: f(80 * 1024)}
	}
	// 1 of 4 cores busy for the hour, 7.9 GiB of 16, an hour and a half of
	// four hours' limit.
	low := store.Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 90 * time.Minute, TimeLimit: store.Known(4 * 3600), ReqMem: store.Known(16 * gib),
		TotalCPU: store.Known(90 * 60 * 1000), MaxRSS: store.Known(79 * gib / 10)}
	for _, tt := range []struct {
		name string
		u    store.Resources
		gpus []GPUStat
		want []ResourceLine
		tips []string
	}{
		{"far off", low, []GPUStat{gpu(0, 0), gpu(1, 100), gpu(2, 90), gpu(3, 60)},
			[]ResourceLine{
				{"CPU efficiency", "25% of 4 cores (CPU time 1h30m0s of 6h0m0s)", "2 cores would do (1.0 busy + 20 %)"},
				{"memory", "peak 7.9 GiB of 16.0 GiB per node (49%)", "--mem=10G would do (peak 7.9 GiB + 20 %)"},
				{"time", "1h30m0s of 4h0m0s limit (38%)", "--time=02:00:00 would do"},
				{"GPU memory", "peak 25% of the GPU's memory", ""},
				{"GPUs", "", "1 GPU would do: GPUs 1–3 were idle"},
			},
			[]string{"2 cores would do (1.0 busy + 20 %)", "--mem=10G would do (peak 7.9 GiB + 20 %)", "--time=02:00:00 would do",
				"1 GPU would do: GPUs 1–3 were idle"}},
		{"well used", store.Resources{AllocCPUs: 2, Nodes: 1, Elapsed: time.Hour, TimeLimit: store.Known(3600 + 600), ReqMem: store.Known(gib),
			TotalCPU: store.Known(2 * 3600 * 900), MaxRSS: store.Known(900 << 20)}, []GPUStat{gpu(0, 10), gpu(1, 10)},
			[]ResourceLine{
				{"CPU efficiency", "90% of 2 cores (CPU time 1h48m0s of 2h0m0s)", ""},
				{"memory", "peak 900.0 MiB of 1.0 GiB per node (88%)", ""},
				{"time", "1h0m0s of 1h10m0s limit (86%)", ""},
				{"GPU memory", "peak 25% of the GPU's memory", ""},
			}, []string{}},
		{"gather none", store.Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 20 * time.Minute, TimeLimit: store.Known(2 * 86400), ReqMem: store.Known(gib)}, nil,
			[]ResourceLine{
				{"CPU efficiency", "not recorded (JobAcctGatherType is none)", ""},
				{"memory", "not recorded (JobAcctGatherType is none)", ""},
				{"time", "20m0s of 48h0m0s limit (1%)", "--time=00:25:00 would do"},
			}, []string{"--time=00:25:00 would do"}},
		{"no limit, no --mem, small peak", store.Resources{AllocCPUs: 1, Nodes: 1, Elapsed: 30 * time.Hour, TotalCPU: store.Known(0), MaxRSS: store.Known(300 << 20)},
			nil,
			[]ResourceLine{
				{"CPU efficiency", "0% of 1 core (CPU time 0s of 30h0m0s)", ""},
				{"memory", "peak 300.0 MiB (no memory asked for)", ""},
				{"time", "30h0m0s, no limit", ""},
			}, []string{}},
		{"day-long limit", store.Resources{AllocCPUs: 1, Nodes: 1, Elapsed: 25 * time.Hour, TimeLimit: store.Known(7 * 86400), ReqMem: store.Known(300 << 20),
			TotalCPU: store.Known(25 * 3600 * 1000), MaxRSS: store.Known(100 << 20)}, nil,
			[]ResourceLine{
				{"CPU efficiency", "100% of 1 core (CPU time 25h0m0s of 25h0m0s)", ""},
				{"memory", "peak 100.0 MiB of 300.0 MiB per node (33%)", "--mem=120M would do (peak 100.0 MiB + 20 %)"},
				{"time", "25h0m0s of 168h0m0s limit (15%)", "--time=1-06:00:00 would do"},
			}, []string{"--mem=120M would do (peak 100.0 MiB + 20 %)", "--time=1-06:00:00 would do"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ResourcesOf(tt.u, &Detail{GPUs: tt.gpus})
			if d := cmp.Diff(tt.want, r.Lines()); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.tips, r.Suggestions); d != "" {
				t.Errorf("suggestions (-want +got):\n%s", d)
			}
		})
	}
}

// TestGPUList: idle GPUs named as a range on one node, one by one with
// their nodes on several.
func TestGPUList(t *testing.T) {
	idx := func(n int64) *int64 { return &n }
	g := func(node string, i int64) GPUStat { return GPUStat{Node: node, Index: idx(i)} }
	for _, tt := range []struct {
		name      string
		all, idle []GPUStat
		want      string
	}{
		{"one", []GPUStat{g("a", 0), g("a", 1)}, []GPUStat{g("a", 1)}, "GPU 1"},
		{"two", []GPUStat{g("a", 0), g("a", 1), g("a", 2)}, []GPUStat{g("a", 1), g("a", 2)}, "GPUs 1, 2"},
		{"range", []GPUStat{g("a", 0), g("a", 1), g("a", 2), g("a", 3)}, []GPUStat{g("a", 1), g("a", 2), g("a", 3)}, "GPUs 1–3"},
		{"gap", []GPUStat{g("a", 0), g("a", 1), g("a", 3), g("a", 4)}, []GPUStat{g("a", 1), g("a", 3), g("a", 4)}, "GPUs 1, 3, 4"},
		{"nodes", []GPUStat{g("a", 0), g("b", 0)}, []GPUStat{g("b", 0)}, "GPU 0 on b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := gpuList(&Detail{GPUs: tt.all}, tt.idle); got != tt.want {
				t.Errorf("gpuList = %q, want %q", got, tt.want)
			}
		})
	}
}
