package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// The agent's inventory lists the MIG instances it enumerated with their
// GPU and compute instance ids, so that a hook whose agent answered finds
// the UUID of the slice it mapped from files (agentproto.MIGUUIDs).
func TestInventoryListsMIGInstances(t *testing.T) {
	s, err := sim.New(sim.Options{Node: testNode, Count: 2, Model: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	migs := s.Device(1).EnableMIGLayout(sim.LayoutH100Mix)
	lib, err := gpu.OpenInterface(context.Background(), s, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	devs, _, err := lib.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	a := &Agent{devs: devs, inventory: agentproto.InventoryPath(sock), log: quietLog()}
	a.publishInventory()
	parent := sim.UUID(testNode, 1)
	ip := func(v int) *int { return &v }
	slice := func(gi int) record.GPU { return record.GPU{Minor: 1, Parent: parent, GI: ip(gi), CI: ip(0)} }
	gpus := []record.GPU{{Minor: 0, UUID: sim.UUID(testNode, 0)}, slice(2), slice(4), slice(7)}
	if err := agentproto.MIGUUIDs(sock, time.Minute, gpus); err != nil {
		t.Fatal(err)
	}
	want := []record.GPU{{Minor: 0, UUID: sim.UUID(testNode, 0)}, slice(2), slice(4), slice(7)}
	want[1].UUID, want[2].UUID = migs[1].UUID(), migs[3].UUID()
	want[3].Missing = []string{"uuid: the agent lists no MIG instance gi7/ci0 on " + parent}
	if d := cmp.Diff(want, gpus); d != "" {
		t.Error(d)
	}
	// an inventory the loop no longer marks is not taken
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(a.inventory, old, old); err != nil {
		t.Fatal(err)
	}
	stale := []record.GPU{slice(2)}
	if err := agentproto.MIGUUIDs(sock, time.Minute, stale); err == nil || stale[0].UUID != "" || len(stale[0].Missing) != 1 {
		t.Errorf("stale inventory taken: %v, %+v", err, stale[0])
	}
}
