package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLiveGolden holds a node's live-state JSON to the bytes it had when
// the golden file was written, as TestGolden does for the other records:
// the head reads what every node's agent writes.
func TestLiveGolden(t *testing.T) {
	live := Live{
		Schema: LiveSchema, Cluster: "c1", Node: "gpu01",
		Time: time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC), Interval: 10,
		GPUs: []LiveGPU{
			{
				Index: 0, Minor: ptr(0), UUID: "GPU-a", Model: "NVIDIA H100 80GB HBM3",
				Util: ptr(uint32(55)), MemUsedMiB: ptr(uint64(1024)), MemTotalMiB: ptr(uint64(81559)),
				PowerMW: ptr(uint32(250000)), TempC: ptr(uint32(61)),
				Jobs:  []LiveJob{{Job: 42, Restart: 1, User: "alice", Account: "physics"}},
				Procs: []LiveProc{{PID: 7, User: "alice", Job: 42, MemUsedMiB: 512}, {PID: 8, User: "1001", Job: 9, MemUsedMiB: 1, Foreign: true}},
			},
			{Index: 1, UUID: "GPU-b", Missing: []string{"power: ERROR_NOT_SUPPORTED", "temperature: ERROR_GPU_IS_LOST"}},
		},
	}
	got, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "live.json")
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
		t.Errorf("live.json changed (-golden +now):\n%s", d)
	}
	var back Live
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(live, back); d != "" {
		t.Errorf("live.json does not read back (-written +read):\n%s", d)
	}
}

func TestLiveFileName(t *testing.T) {
	if got, want := LiveFileName("gpu01"), "gpu01.json"; got != want {
		t.Errorf("LiveFileName(gpu01) = %q, want %q", got, want)
	}
}
