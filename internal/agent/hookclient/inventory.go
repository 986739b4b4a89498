package hookclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/aicloud/gpusuite/internal/agent/sockline"
	"github.com/aicloud/gpusuite/internal/record"
)

// Inventory is what the agent publishes beside its hook socket at each
// enumeration of the GPUs: the identities an identify would answer with.
// A hook reads it instead of waiting for the answer (Expect).
type Inventory struct {
	// PID is the agent's: a hook takes the file only from the agent that
	// listens on the socket.
	PID int `json:"pid"`
	// GPUs are the GPUs with a device minor (no MIG devices), with their
	// index, UUID and model; no energy.
	GPUs []record.GPU `json:"gpus"`
}

// maxInventory bounds the file a hook reads.
const maxInventory = 1 << 20

// InventoryPath is the inventory of the agent listening at sock: a hidden
// file beside it, which the shipper leaves alone.
func InventoryPath(sock string) string {
	return filepath.Join(filepath.Dir(sock), "."+filepath.Base(sock)+".gpus.json")
}

// ErrInventory is an inventory that cannot stand in for the agent's answer:
// missing, unreadable, another process's, or without one of the minors.
var ErrInventory = errors.New("agent inventory unusable")

// Expect identifies the GPUs with the given minors from the inventory of
// the agent listening at path, then tells that agent, without waiting for
// its answer, that the event of key is about to be written for them: the
// agent reads their energy counters for it, as after answering an
// identify. A job's start thus waits for no other process. An error
// wrapping sockline.ErrConnect means no agent listens; ErrInventory, that
// the caller should ask with Identify.
func Expect(ctx context.Context, path string, timeout time.Duration, minors []int, key string) ([]record.GPU, error) {
	// the file first: without a usable one the caller's identify is the
	// only connection
	inv, gpus, err := readInventory(InventoryPath(path), minors)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("agent socket %q: %s: %w: %w", path, OpIdentify, sockline.ErrConnect, err)
	}
	defer c.Close()
	cred, err := sockline.PeerCred(c.(*net.UnixConn))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInventory, err)
	}
	if inv.PID != int(cred.Pid) {
		return nil, fmt.Errorf("%w: %q is pid %d's, the socket's agent is pid %d", ErrInventory, InventoryPath(path), inv.PID, cred.Pid)
	}
	data, err := json.Marshal(Request{Op: OpIdentify, Minors: minors, Key: key})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write(append(data, '\n')); err != nil {
		return nil, fmt.Errorf("agent socket %q: %s: send: %w", path, OpIdentify, err)
	}
	return gpus, nil
}

// readInventory reads the inventory at p and returns it with the GPUs of
// the given minors, in their order.
func readInventory(p string, minors []int) (Inventory, []record.GPU, error) {
	var inv Inventory
	f, err := os.Open(p)
	if err != nil {
		return inv, nil, fmt.Errorf("%w: %w", ErrInventory, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInventory+1))
	if err != nil {
		return inv, nil, fmt.Errorf("%w: read %q: %w", ErrInventory, p, err)
	}
	if len(data) > maxInventory {
		return inv, nil, fmt.Errorf("%w: %q is over %d bytes", ErrInventory, p, maxInventory)
	}
	if err := json.Unmarshal(data, &inv); err != nil {
		return inv, nil, fmt.Errorf("%w: %q: %w", ErrInventory, p, err)
	}
	out := make([]record.GPU, len(minors))
	for i, m := range minors {
		found := false
		for _, g := range inv.GPUs {
			if g.Minor == m && g.UUID != "" {
				out[i] = record.GPU{Minor: m, Index: g.Index, UUID: g.UUID, Model: g.Model}
				found = true
				break
			}
		}
		if !found {
			return inv, nil, fmt.Errorf("%w: no GPU with minor number %d in %q", ErrInventory, m, p)
		}
	}
	return inv, out, nil
}
