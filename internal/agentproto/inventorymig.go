package agentproto

import (
	"fmt"
	"slices"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// MIGUUIDs fills, from the inventory of the agent listening at sock, the
// MIG UUID of each slice in gpus that has a Parent, GPU and compute
// instance and no UUID yet; a slice not listed is noted in Missing. The
// agent has just answered the hook, so the inventory is taken when its
// loop marked it within maxAge and no one else can write it.
func MIGUUIDs(sock string, maxAge time.Duration, gpus []record.GPU) error {
	if !slices.ContainsFunc(gpus, isUnreadSlice) {
		return nil
	}
	p := InventoryPath(sock)
	inv, _, err := readInventory(p, nil)
	if err == nil && inv.stat.Mode().Perm()&0o022 != 0 {
		err = fmt.Errorf("%w: %q is writable by others (mode %v)", ErrInventory, p, inv.stat.Mode())
	}
	if err == nil {
		if age := time.Since(inv.stat.ModTime()); age > maxAge || age < -maxAge {
			err = fmt.Errorf("%w: %q was last marked %s ago, over %s", ErrInventory, p, age.Round(time.Millisecond), maxAge)
		}
	}
	fillMIG(inv, err, gpus)
	return err
}

// MIGUUIDs is the package's MIGUUIDs for gpus that Ask identified with
// e: from the inventory Expect read and trusted, or, when Ask returned
// no Expected (the agent answered an identify), from the agent's
// inventory at sock, read now.
func (e *Expected) MIGUUIDs(sock string, maxAge time.Duration, gpus []record.GPU) error {
	if e == nil || e.inv == nil {
		return MIGUUIDs(sock, maxAge, gpus)
	}
	fillMIG(*e.inv, nil, gpus)
	return nil
}

// fillMIG fills the unread slices of gpus from inv, or notes err, why
// inv could not be read, in their Missing.
func fillMIG(inv Inventory, err error, gpus []record.GPU) {
	for i := range gpus {
		g := &gpus[i]
		if !isUnreadSlice(*g) {
			continue
		}
		if err != nil {
			g.Missing = append(g.Missing, "uuid: "+err.Error())
			continue
		}
		found := false
		for _, m := range inv.MIG {
			if m.Parent == g.Parent && m.GI != nil && m.CI != nil && *m.GI == *g.GI && *m.CI == *g.CI {
				g.UUID, found = m.UUID, true
				break
			}
		}
		if !found {
			g.Missing = append(g.Missing, fmt.Sprintf("uuid: the agent lists no MIG instance gi%d/ci%d on %s", *g.GI, *g.CI, g.Parent))
		}
	}
}

func isUnreadSlice(g record.GPU) bool {
	return g.Parent != "" && g.GI != nil && g.CI != nil && g.UUID == ""
}
