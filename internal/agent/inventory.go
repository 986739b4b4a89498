package agent

import (
	"encoding/json"
	"os"

	"github.com/aicloud/gpusuite/internal/agent/hookclient"
	"github.com/aicloud/gpusuite/internal/record"
)

// publishInventory writes the GPUs' identities beside the hook socket after
// an enumeration: a hook reads them there instead of waiting for an
// identify's answer (hookclient.Expect). The file is replaced whole; one
// that cannot be written is removed, so that no hook takes an outdated one
// (the hooks then ask the socket).
func (a *Agent) publishInventory() {
	if a.inventory == "" {
		return
	}
	inv := hookclient.Inventory{PID: os.Getpid(), GPUs: []record.GPU{}}
	for _, d := range a.devs {
		if d.Parent == "" { // MIG devices have no minor of their own
			idx := d.Index
			inv.GPUs = append(inv.GPUs, record.GPU{Minor: d.Minor, Index: &idx, UUID: d.UUID, Model: d.Model})
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
