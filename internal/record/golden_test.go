package record

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ptr[T any](v T) *T { return &v }

// TestGolden holds the JSON of every record kind to the bytes the schema
// had when the golden files were written: a field or tag edit anywhere that
// changes what a node writes fails here.
func TestGolden(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)
	event := Event{
		Schema: EventSchema, Key: EventKey("c1", 42, 1, "gpu01", JobEnd), Kind: JobEnd, Time: t0,
		Source: "epilog", Cluster: "c1", Node: "gpu01",
		Job: Job{
			ID: 42, ArrayJobID: 40, ArrayTaskID: ptr(int64(2)), RestartCount: 1, User: "alice",
			UID: ptr(int64(1000)), GID: ptr(int64(100)), Account: "physics", Partition: "gpu",
			Node: "gpu01", Cluster: "c1", GPUs: []int{0, 3}, CUDAVisibleDevices: "0,1",
			Context: "epilog_slurmd",
			Exit:    &Exit{Code: 1, Signal: 9, Raw: ptr(int64(265)), Derived: ptr(int64(2))},
		},
		GPUs: []GPU{
			{Minor: 0, Index: ptr(0), UUID: "GPU-a", Model: "NVIDIA H100 80GB HBM3", EnergyMJ: ptr(uint64(123456))},
			{Minor: 3, Missing: []string{"uuid: ERROR_GPU_IS_LOST"}},
		},
		Quality: []string{"nvml_unavailable: ERROR_LIBRARY_NOT_FOUND"},
	}
	header := SegmentHeader{Schema: SegmentSchema, Key: SegmentKey("c1", "gpu01", 7), Cluster: "c1", Node: "gpu01", Seq: 7, Interval: 10, Start: t0,
		Metrics:     []string{"sm_active_pct", "nvlink_tx_bytes_per_s"},
		Unsupported: map[string][]string{"MIG-b": {"nvlink_tx_bytes_per_s: ERROR_NOT_SUPPORTED"}}}
	profileHeader := SegmentHeader{Schema: SegmentSchema, Key: SegmentKey("c1", "gpu01", 8), Cluster: "c1", Node: "gpu01", Seq: 8, Interval: 0.2, Start: t0,
		Profile: &Profile{Job: 42, Restart: 1, UID: 1000, Start: t0, End: t0.Add(10 * time.Minute)}}
	sample := Sample{
		Time: t0, UUID: "MIG-b", Index: 1, SampleMIG: &SampleMIG{Parent: "GPU-a"},
		Jobs:    []JobShare{{Job: 42, Restart: 1, Share: 0.5, Idle: true}, {Job: 43, Share: 0.5}},
		GPUUtil: ptr(uint32(55)), MemUtil: ptr(uint32(12)), MemUsedMiB: ptr(uint64(1024)), MemTotalMiB: ptr(uint64(81559)),
		PowerMW: ptr(uint32(250000)), EnergyMJ: ptr(uint64(99)), TempC: ptr(uint32(61)), SMClockMHz: ptr(uint32(1980)),
		Throttle: ptr(uint64(4)), ECCErrors: ptr(uint64(0)), XIDErrors: ptr(uint64(1)),
		Metrics: map[string]float64{"sm_active_pct": 87.5, "nvlink_tx_bytes_per_s": 1.5e11, "mem_clock_mhz": 2619},
		Procs:   []Proc{{PID: 7, MemUsedMiB: 512, Job: 42}, {PID: 8, MemUsedMiB: 1, Job: 9, Foreign: true, CgroupError: "read /proc/8/cgroup: gone"}},
		Missing: []string{"power: ERROR_NOT_SUPPORTED"},
	}
	agg := JobGPU{
		Schema: JobGPUSchema, Key: JobGPUKey("c1", 42, 1, "gpu01", "GPU-a"), Seq: 3, Final: true, Cluster: "c1", Node: "gpu01",
		Job: 42, RestartCount: 1, User: "alice", Account: "physics", Partition: "gpu", UUID: "GPU-a", Index: 0,
		Model: "NVIDIA H100 80GB HBM3", First: t0, Last: t0.Add(time.Hour), Samples: 360, SampleSeconds: 3600,
		UtilSeconds: 1800.5, UtilMax: 100, MemMaxMiB: 4096, MemTotalMiB: 81559, EnergyMJ: 7, IdleSeconds: 20,
		Quality: map[string]uint64{"energy_counter_reset": 1, "power: ERROR_NOT_SUPPORTED": 2},
	}
	gpuEvent := GPUEvent{
		Schema: GPUEventSchema, Key: GPUEventKey("c1", "gpu01", "GPU-a", t0, GPUXid, 79, ""), Kind: GPUXid, Time: t0,
		Cluster: "c1", Node: "gpu01", UUID: "GPU-a", Index: 0, Code: 79, Jobs: []JobRef{{Job: 42, Restart: 1}}, Suppressed: 3,
	}
	throttle := GPUEvent{
		Schema: GPUEventSchema, Key: GPUEventKey("c1", "gpu01", "GPU-a", t0, GPUThrottleStart, 0, ThrottleThermal), Kind: GPUThrottleStart, Time: t0,
		Cluster: "c1", Node: "gpu01", UUID: "GPU-a", Index: 0, Reason: ThrottleThermal,
	}
	for _, tc := range []struct {
		name string
		v    []any
	}{
		{"event.json", []any{event}},
		{"segment.jsonl", []any{header, sample}},
		{"jobgpu.json", []any{agg}},
		{"profile.jsonl", []any{profileHeader, Sample{Time: t0, UUID: "GPU-a", Index: 0, Jobs: []JobShare{{Job: 42, Restart: 1, Share: 1}},
			GPUUtil: ptr(uint32(100)), PowerMW: ptr(uint32(690000)), Metrics: map[string]float64{"sm_active_pct": 99.25}}}},
		{"gpuevent.jsonl", []any{gpuEvent, throttle}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			for _, v := range tc.v {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				got = append(append(got, b...), '\n')
			}
			path := filepath.Join("testdata", tc.name)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s changed (-golden +now):\n%s", tc.name, d)
			}
		})
	}
}
