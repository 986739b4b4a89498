package agentproto

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// GPUs Ask took from the inventory have the slices' MIG UUIDs from
// that same read: the file is not read again (here it is gone by then).
func TestAskInventoryFillsMIGUUIDs(t *testing.T) {
	ip := func(v int) *int { return &v }
	inv := Inventory{PID: os.Getpid(),
		GPUs: []record.GPU{{Minor: 0, Index: ip(0), UUID: "GPU-a", Model: "A100"}},
		MIG:  []record.GPU{{Parent: "GPU-a", UUID: "MIG-x", GI: ip(1), CI: ip(0)}},
	}
	data, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	if err := os.WriteFile(InventoryPath(sock), data, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, e, err := Ask(context.Background(), sock, 2*time.Second, time.Minute, []int{0}, false, "cl/42/0/n1/job_start")
	if err != nil || e == nil {
		t.Fatalf("Ask: %v (from the inventory: %v)", err, e != nil)
	}
	defer e.Close()
	if err := os.Remove(InventoryPath(sock)); err != nil {
		t.Fatal(err)
	}
	gpus := []record.GPU{{Minor: 0, Parent: "GPU-a", GI: ip(1), CI: ip(0)}}
	if err := e.MIGUUIDs(sock, time.Minute, gpus); err != nil {
		t.Fatal(err)
	}
	if gpus[0].UUID != "MIG-x" || len(gpus[0].Missing) != 0 {
		t.Errorf("slice = %+v, want UUID MIG-x from the inventory Ask read", gpus[0])
	}
}
