// Package hookgpu answers a hook's question about its job's GPUs by opening
// NVML itself, as the agent would answer it from the NVML it holds open. The
// hooks are static binaries that link no NVML, so that every job start is
// spared a dynamic loader; when no agent answers, they run hook-gpus
// (Serve), and the simulations call Asker in process.
package hookgpu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/agent/hookclient"
	"github.com/aicloud/gpusuite/internal/gpu"
)

// Open opens the GPU backend a request names.
type Open func(ctx context.Context, req hookclient.Direct) (*gpu.Library, error)

// OpenConfigured opens the backend of req.GPU, as the agent does: the
// driver's NVML, or one this build registered.
func OpenConfigured(ctx context.Context, req hookclient.Direct) (*gpu.Library, error) {
	return gpu.Open(ctx, req.GPU, req.Node, req.Timeout.Duration)
}

// Asker is a hook's way to its GPUs without the agent, in process: open,
// answer, close.
func Asker(open Open) func(ctx context.Context, req hookclient.Direct) (hookclient.Response, error) {
	return func(ctx context.Context, req hookclient.Direct) (hookclient.Response, error) {
		return answer(ctx, open, req), nil
	}
}

// Serve reads one request from r (at most hookclient.MaxMessage bytes),
// answers it through open before the request's deadline, and writes the
// answer to w as one JSON line. An
// NVML that cannot be opened is an answer too (Response.Error); the error
// is for a request that cannot be read or an answer that cannot be written.
func Serve(ctx context.Context, r io.Reader, w io.Writer, open Open) error {
	data, err := io.ReadAll(io.LimitReader(r, hookclient.MaxMessage+1))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if len(data) > hookclient.MaxMessage {
		return fmt.Errorf("read request: longer than %d bytes", hookclient.MaxMessage)
	}
	var req hookclient.Direct
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
func answer(ctx context.Context, open Open, req hookclient.Direct) hookclient.Response {
	lib, err := open(ctx, req)
	if err != nil {
		return hookclient.Response{Error: err.Error()}
	}
	defer lib.Close()
	var resp hookclient.Response
	resp.GPUs, err = lib.Identify(ctx, req.Minors)
	if err != nil {
		resp.Error = err.Error()
	}
	if !req.Procs {
		return resp
	}
	resp.Procs, resp.ProcErrors = map[string][]hookclient.Process{}, map[string]string{}
	for _, g := range resp.GPUs {
		if g.UUID == "" {
			continue
		}
		ps, err := lib.Processes(ctx, g.UUID)
		if err != nil {
			resp.ProcErrors[g.UUID] = err.Error()
			continue
		}
		resp.Procs[g.UUID] = Processes(ps)
	}
	return resp
}

// Processes is NVML's process list in the hook socket's shape.
func Processes(ps []nvml.ProcessInfo) []hookclient.Process {
	out := make([]hookclient.Process, 0, len(ps))
	for _, p := range ps {
		out = append(out, hookclient.Process{PID: p.Pid, MemUsedMiB: p.UsedGpuMemory >> 20})
	}
	return out
}
