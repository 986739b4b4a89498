package agentproto

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
)

// Operations on the agent socket: a hook asks the running agent for its
// GPUs' identities and energy counters (so that it need not initialise
// NVML, which can take a second), and announces a job's start or end.
const (
	OpIdentify = "identify"
	OpAnnounce = "announce"
)

// MaxMessage bounds one request or response line.
const MaxMessage = 1 << 20

// Request is one line a hook sends.
type Request struct {
	Op string `json:"op"`
	// Minors are the device minors to identify (OpIdentify).
	Minors []int `json:"minors,omitempty"`
	// Procs asks for each GPU's compute processes (for the health check).
	Procs bool `json:"procs,omitempty"`
	// Key names the event the hook is about to write (OpIdentify): the
	// agent then answers without energy counters, reads them itself right
	// after answering, and gives them to the event of that key.
	Key string `json:"key,omitempty"`
	// Event is the job event just spooled (OpAnnounce).
	Event *record.Event `json:"event,omitempty"`
}

// Proc is one compute process on a GPU.
type Proc struct {
	PID        uint32 `json:"pid"`
	MemUsedMiB uint64 `json:"mem_mib"`
}

// Response is the agent's one-line answer.
type Response struct {
	GPUs  []record.GPU      `json:"gpus,omitempty"`
	Procs map[string][]Proc `json:"procs,omitempty"`
	// ProcErrors says, per UUID, why its processes could not be listed.
	ProcErrors map[string]string `json:"proc_errors,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// ErrRefused is a request the agent refused (on either socket); its
// reason follows.
var ErrRefused = errors.New("agent refused")

// Identify asks the agent at path for the GPUs with the given minors, for
// the event of key (the agent reads their energy for it after answering;
// "" asks for the energy in the answer).
func Identify(ctx context.Context, path string, timeout time.Duration, minors []int, procs bool, key string) (Response, error) {
	return Do(ctx, path, timeout, Request{Op: OpIdentify, Minors: minors, Procs: procs, Key: key})
}

// Announce tells the agent at path about a job event already spooled. It
// does not wait for the agent's answer: the event is on disk, and an agent
// that drops the announcement (busy) reads the spooled file instead, so
// the job's start need not wait for the agent to be scheduled.
func Announce(ctx context.Context, path string, timeout time.Duration, ev *record.Event) error {
	if err := Send(ctx, path, timeout, Request{Op: OpAnnounce, Event: ev}); err != nil {
		return fmt.Errorf("agent socket %q: %s: %w", path, OpAnnounce, err)
	}
	return nil
}

// Do sends one request and reads one response, all within timeout.
func Do(ctx context.Context, path string, timeout time.Duration, req Request) (Response, error) {
	var resp Response
	if err := Exchange(ctx, path, timeout, MaxMessage, req, &resp); err != nil {
		return resp, fmt.Errorf("agent socket %q: %s: %w", path, req.Op, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("%w: %s", ErrRefused, resp.Error)
	}
	if req.Op == OpIdentify && len(resp.GPUs) != len(req.Minors) {
		return resp, fmt.Errorf("agent socket %q: %d GPUs answered for %d minors", path, len(resp.GPUs), len(req.Minors))
	}
	return resp, nil
}

// NewProc is one compute process as NVML lists it (pid, memory used in
// bytes) in the socket's shape, for the agent and hook-gpus alike.
func NewProc(pid uint32, usedBytes uint64) Proc {
	return Proc{PID: pid, MemUsedMiB: usedBytes >> 20}
}

// ProcsOf returns the processes listed for uuid, for the prolog's
// health check.
func (r Response) ProcsOf(_ context.Context, uuid string) ([]Proc, error) {
	if e, ok := r.ProcErrors[uuid]; ok {
		return nil, errors.New(e)
	}
	ps, ok := r.Procs[uuid]
	if !ok {
		return nil, fmt.Errorf("no processes listed for %s", uuid)
	}
	return ps, nil
}

// HelperName is the program, beside the hooks, that a hook whose agent
// does not answer runs to reach NVML (hook-gpus/, internal/hookgpus).
const HelperName = "hook-gpus"

// Direct is what a hook whose agent did not answer sends to hook-gpus on
// its standard input: what that process needs to open the
// GPU backend the hook's config names and answer an identify (energy
// counters in the answer, as for a request without a key).
type Direct struct {
	GPU  config.GPU `json:"gpu"`
	Node string     `json:"node"`
	// Timeout bounds nvmlInit and each NVML call (hooks.nvml_timeout).
	Timeout config.Duration `json:"nvml_timeout"`
	Minors  []int           `json:"minors"`
	Procs   bool            `json:"procs,omitempty"`
	// MIG names, per minor, the MIG slice held on that GPU (nil: the whole
	// GPU); its answer is the slice (record.GPU's Parent, GI, CI, UUID).
	MIG []*MIGRef `json:"mig,omitempty"`
	// Deadline is when the hook stops waiting: the helper answers before
	// it with what it has read, rather than be killed with nothing said.
	Deadline time.Time `json:"deadline,omitzero"`
}

// MIGRef is a MIG slice as the hooks map it from files: GPU and compute
// instance ids on the GPU of its minor.
type MIGRef struct {
	GI int `json:"gi"`
	CI int `json:"ci"`
}
