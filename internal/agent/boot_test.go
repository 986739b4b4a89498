package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// TestRebootEndsAllocations: an agent that starts again in a new boot (the
// kernel's boot id changed since its checkpoint) ends the allocations it
// had, ships their aggregates final with the samples taken before, and
// attributes no later sample to them; one that starts again in the same
// boot (the agent alone restarted) keeps them; so does one that cannot
// read the boot id.
func TestRebootEndsAllocations(t *testing.T) {
	tests := []struct {
		name         string
		before, then string // boot ids at the first start and after the crash
		wantKept     bool
	}{
		{name: "reboot", before: "boot-a", then: "boot-b", wantKept: false},
		{name: "agent restart", before: "boot-a", then: "boot-a", wantKept: true},
		{name: "boot id unreadable", before: "", then: "", wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2, nil)
			setBootID(t, e.procRoot, tt.before)
			e.a = e.open()
			e.sim.Device(0).SetWorkload(sim.Busy(60, 1000))
			e.cgroup(1000, 3)
			e.event(record.JobStart, 3, 0, 1)
			e.cycles(5)
			setBootID(t, e.procRoot, tt.then)
			e.a = e.open() // no Stop: the node (or the agent) went down
			key := jobKey(3, 0)
			if _, kept := e.a.allocs[key]; kept != tt.wantKept {
				t.Fatalf("after the restart: allocation of job 3 kept = %v, want %v", kept, tt.wantKept)
			}
			e.cycles(65) // past a roll: aggregates are spooled
			if _, err := e.ship(); err != nil {
				t.Fatal(err)
			}
			got := e.arrived()
			for gpu := range 2 {
				uuid := e.sim.Device(gpu).UUID
				agg, ok := got.aggs[record.JobGPUKey(testCluster, 3, 0, testNode, uuid)]
				if !ok {
					t.Fatalf("no aggregate of job 3 on GPU %d arrived", gpu)
				}
				switch {
				case !tt.wantKept && (!agg.Final || agg.Samples != 5):
					t.Errorf("GPU %d: aggregate final=%v with %d samples, want final with the 5 samples before the reboot", gpu, agg.Final, agg.Samples)
				case tt.wantKept && (agg.Final || agg.Samples <= 5):
					t.Errorf("GPU %d: aggregate final=%v with %d samples, want the job running on, sampled after the restart too", gpu, agg.Final, agg.Samples)
				}
			}
		})
	}
}

// setBootID writes the boot id the agent reads under procRoot ("" removes it).
func setBootID(t *testing.T, procRoot, id string) {
	t.Helper()
	p := filepath.Join(procRoot, bootIDPath)
	if id == "" {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
