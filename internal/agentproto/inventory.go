package agentproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

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
	// MIG are the MIG instances: Parent, UUID, Model, GI and CI, by which
	// a hook finds the UUID of the slice it mapped from files.
	MIG []record.GPU `json:"mig,omitempty"`

	stat os.FileInfo // of the file it was read from
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
// identify. A job's start thus waits for no other process. The inventory
// must be the listening agent's and marked within maxAge. The event's
// announce follows on the same connection (Expected.Announce), so the
// agent has registered the reading before the event comes to take it. An
// error wrapping ErrConnect means no agent listens; ErrInventory,
// that the caller should ask with Identify.
func Expect(ctx context.Context, path string, timeout, maxAge time.Duration, minors []int, key string) ([]record.GPU, *Expected, error) {
	// the file first: without a usable one the caller's identify is the
	// only connection
	inv, gpus, err := readInventory(InventoryPath(path), minors)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := Dial(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("agent socket %q: %s: %w", path, OpIdentify, err)
	}
	e := &Expected{c: c, path: path, timeout: timeout}
	cred, err := PeerCred(c)
	if err == nil {
		err = inv.trusted(InventoryPath(path), cred, maxAge)
	}
	if err == nil {
		err = e.send(Request{Op: OpIdentify, Minors: minors, Key: key})
	}
	if err != nil {
		e.Close()
		return nil, nil, err
	}
	e.inv = &inv
	return gpus, e, nil
}

// Expected is an identify sent without waiting for the answer, on a
// connection kept for the event's announce; its holder closes it.
type Expected struct {
	c       net.Conn
	path    string
	timeout time.Duration
	inv     *Inventory // read and trusted: its MIG instances (MIGUUIDs)
}

// Announce tells the agent about the event just spooled, after the
// identify on the same connection; it does not wait for an answer (see
// Announce).
func (e *Expected) Announce(ev *record.Event) error {
	return e.send(Request{Op: OpAnnounce, Event: ev})
}

// Close ends the connection.
func (e *Expected) Close() error { return e.c.Close() }

func (e *Expected) send(req Request) error {
	_ = e.c.SetDeadline(time.Now().Add(e.timeout))
	if err := WriteLine(e.c, req); err != nil {
		return fmt.Errorf("agent socket %q: %s: %w", e.path, req.Op, err)
	}
	return nil
}

// InventoryMaxAge is how old an inventory may be for an agent whose loop
// ticks every interval and marks it at each tick.
func InventoryMaxAge(interval time.Duration) time.Duration {
	return 3*interval + 5*time.Second
}

// Ask asks the agent at path for the GPUs with the given minors, for the
// event of key: from its inventory without waiting (Expect; the returned
// Expected, then non-nil, carries the event's announce and must be
// closed), or, for the health check's process lists (procs) or when the
// inventory will not do, by an identify it answers. interval is
// agent.interval. An error wrapping ErrConnect means no agent
// listens.
func Ask(ctx context.Context, path string, timeout, interval time.Duration, minors []int, procs bool, key string) (Response, *Expected, error) {
	if !procs {
		gpus, e, err := Expect(ctx, path, timeout, InventoryMaxAge(interval), minors, key)
		if !errors.Is(err, ErrInventory) {
			return Response{GPUs: gpus}, e, err
		}
	}
	resp, err := Identify(ctx, path, timeout, minors, procs, key)
	return resp, nil, err
}

// readInventory reads the inventory at p and returns it with the GPUs of
// the given minors, in their order. It opens without blocking (a FIFO
// planted there must not hold the hook) and takes regular files only.
func readInventory(p string, minors []int) (Inventory, []record.GPU, error) {
	var inv Inventory
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return inv, nil, fmt.Errorf("%w: %w", ErrInventory, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return inv, nil, fmt.Errorf("%w: %w", ErrInventory, err)
	}
	if !st.Mode().IsRegular() {
		return inv, nil, fmt.Errorf("%w: %q is not a regular file", ErrInventory, p)
	}
	inv.stat = st
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

// trusted says why the inventory read from p may not stand for the agent
// that listens with cred: another process's, owned by another user or
// writable by others, or older than maxAge (the agent's loop no longer
// marks it: a wedged agent would take the event and never read its
// energy).
func (inv Inventory) trusted(p string, cred *syscall.Ucred, maxAge time.Duration) error {
	if inv.PID != int(cred.Pid) {
		return fmt.Errorf("%w: %q is pid %d's, the socket's agent is pid %d", ErrInventory, p, inv.PID, cred.Pid)
	}
	st, ok := inv.stat.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != cred.Uid || inv.stat.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %q is not the agent's alone (mode %v)", ErrInventory, p, inv.stat.Mode())
	}
	if age := time.Since(inv.stat.ModTime()); age > maxAge || age < -maxAge {
		return fmt.Errorf("%w: %q was last marked %s ago, over %s: the agent's loop is not running", ErrInventory, p, age.Round(time.Millisecond), maxAge)
	}
	return nil
}
