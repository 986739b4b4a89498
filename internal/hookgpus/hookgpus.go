// Package hookgpus is what the hook-gpus program does: answer a hook's
// question about its job's GPUs by opening NVML itself, as the agent would
// answer it from the NVML it holds open. The hooks are static binaries that
// link no NVML, so that every job start is spared a dynamic loader; when no
// agent answers, they run hook-gpus (Serve), and the simulations call Asker
// in process. The question and the answer are internal/agentproto's
// (Direct, Response); this package and the agent are peers that both
// answer it.
package hookgpus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
)

// Open opens the GPU backend a request names.
type Open func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error)

// OpenConfigured opens the backend of req.GPU, as the agent does: the
// driver's NVML, or one this build registered.
func OpenConfigured(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
	return gpu.Open(ctx, req.GPU, req.Node, req.Timeout.Duration)
}

// Asker is a hook's way to its GPUs without the agent, in process: open,
// answer, close.
func Asker(open Open) func(ctx context.Context, req agentproto.Direct) (agentproto.Response, error) {
	return func(ctx context.Context, req agentproto.Direct) (agentproto.Response, error) {
		return answer(ctx, open, req), nil
	}
}

// Serve reads one request from r (at most agentproto.MaxMessage bytes),
// answers it through open before the request's deadline, and writes the
// answer to w as one JSON line. An
// NVML that cannot be opened is an answer too (Response.Error); the error
// is for a request that cannot be read or an answer that cannot be written.
func Serve(ctx context.Context, r io.Reader, w io.Writer, open Open) error {
	data, err := io.ReadAll(io.LimitReader(r, agentproto.MaxMessage+1))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if len(data) > agentproto.MaxMessage {
		return fmt.Errorf("read request: longer than %d bytes", agentproto.MaxMessage)
	}
	var req agentproto.Direct
	if err := json.Unmarshal(data, &req); err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}
	out, err := json.Marshal(answer(ctx, open, req))
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	if _, err := w.Write(append(out, '\n')); err != nil {
		return fmt.Errorf("write answer: %w", err)
	}
	return nil
}

// answer identifies the GPUs with req's minors and reads their energy
// counters (and, when asked, their processes). Response.Error says why
// NVML could not be opened, or, beside the GPUs, why the device list could
// not be read.
func answer(ctx context.Context, open Open, req agentproto.Direct) agentproto.Response {
	lib, err := open(ctx, req)
	if err != nil {
		return agentproto.Response{Error: err.Error()}
	}
	defer lib.Close()
	var resp agentproto.Response
	resp.GPUs, err = lib.Identify(ctx, req.Minors)
	if err != nil {
		resp.Error = err.Error()
	}
	asSlices(ctx, lib, resp.GPUs, req.MIG)
	if !req.Procs {
		return resp
	}
	resp.Procs, resp.ProcErrors = map[string][]agentproto.Proc{}, map[string]string{}
	for _, g := range resp.GPUs {
		if g.UUID == "" {
			continue
		}
		ps, err := lib.Processes(ctx, g.UUID)
		if err != nil {
			resp.ProcErrors[g.UUID] = err.Error()
			continue
		}
		resp.Procs[g.UUID] = processes(ps)
	}
	return resp
}

// processes is NVML's process list in the socket's shape.
func processes(ps []nvml.ProcessInfo) []agentproto.Proc {
	out := make([]agentproto.Proc, 0, len(ps))
	for _, p := range ps {
		out = append(out, agentproto.NewProc(p.Pid, p.UsedGpuMemory))
	}
	return out
}

// asSlices turns the identified parents of the MIG slices named in refs
// into the slices: the parent's UUID becomes Parent, and UUID the
// instance's, read from the parent by its GPU and compute instance ids.
func asSlices(ctx context.Context, lib *gpu.Library, gpus []record.GPU, refs []*agentproto.MIGRef) {
	any := false
	for i, r := range refs {
		if r == nil || i >= len(gpus) || gpus[i].UUID == "" {
			continue
		}
		gi, ci := r.GI, r.CI
		gpus[i].Parent, gpus[i].UUID, gpus[i].GI, gpus[i].CI = gpus[i].UUID, "", &gi, &ci
		any = true
	}
	if any {
		lib.MIGUUIDs(ctx, gpus)
	}
}
