package agent

import (
	"encoding/json"
	"os"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/record"
)

// publishInventory writes the GPUs' identities beside the hook socket once
// the agent listens there and after every enumeration: a hook reads them there instead of waiting for an
// identify's answer (agentproto.Expect). The file is replaced whole; one
// that cannot be written is removed, so that no hook takes an outdated one
// (the hooks then ask the socket).
func (a *Agent) publishInventory() {
	if a.inventory == "" {
		return
	}
	inv := agentproto.Inventory{PID: os.Getpid(), GPUs: []record.GPU{}}
	for _, d := range a.devs {
		if d.Parent == "" { // MIG devices have no minor of their own
			idx := d.Index
			inv.GPUs = append(inv.GPUs, record.GPU{Minor: d.Minor, Index: &idx, UUID: d.UUID, Model: d.Model})
		} else if d.GI >= 0 && d.CI >= 0 {
			gi, ci := d.GI, d.CI
			inv.MIG = append(inv.MIG, record.GPU{Minor: d.Minor, UUID: d.UUID, Model: d.Model, Parent: d.Parent, GI: &gi, CI: &ci})
		}
	}
	data, err := json.Marshal(inv)
	if err == nil {
		err = replaceFile(a.inventory, data, 0o600)
	}
	if err != nil {
		a.log.Warn("GPU inventory for the hooks not written; they will ask the socket", "err", err)
		_ = os.Remove(a.inventory)
	}
}

// keepInventory marks the inventory current at every tick of the loop: a
// hook takes it only while the loop runs (agentproto.Expect's maxAge), so
// that an agent that accepts connections but no longer handles them sends
// the hooks to their fallback. A missing file is written again.
func (a *Agent) keepInventory() {
	if a.inventory == "" {
		return
	}
	now := time.Now() // the file's clock, as the hooks read it
	if err := os.Chtimes(a.inventory, now, now); err != nil {
		a.publishInventory()
	}
}
