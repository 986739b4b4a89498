package snapshot

import (
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/live"
	"github.com/aicloud/gpusuite/internal/record"
)

// TestWrite: what Write put in place, the board's reader reads back as
// the node's snapshot, and no temporary file is left beside it.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	util := uint32(40)
	for _, u := range []uint32{util, util + 1} {
		Write(t, dir, record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: "n1", Time: at, Interval: 10,
			GPUs: []record.LiveGPU{{Index: 0, UUID: "GPU-0", Util: &u}}})
	}
	l, err := live.ReadNode(dir, "n1", 1<<20, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GPUs) != 1 || l.GPUs[0].Util == nil || *l.GPUs[0].Util != util+1 {
		t.Errorf("read back %+v, want the second snapshot's GPU at %d %%", l.GPUs, util+1)
	}
	if es, err := os.ReadDir(dir); err != nil || len(es) != 1 {
		t.Errorf("dir holds %v (%v), want the snapshot alone", es, err)
	}
}
