package simcluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/hookgpus"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// NodeConfig is the gpusuite.toml of node in a cluster described by o,
// for a caller that runs the node's agent itself (a live demo in real
// time): production defaults with o's directories and intervals. Unlike
// Run it checks nothing: o's Interval, Segment, Ship, NodeRoot and
// Incoming must be set.
func NodeConfig(o Options, node string) config.Config { return nodeConfig(&o, node) }

// RunHook runs the real prolog (record.JobStart) or epilog (record.JobEnd)
// of j with the environment slurmd gives it, as Run does for its jobs. d
// is the node's: its clock, /proc and the GPUs the hook opens when no
// agent answers on the hook socket.
func RunHook(ctx context.Context, kind record.Kind, cfg config.Config, d hook.Deps, j *Job, cluster string, log *slog.Logger) error {
	return runHook(ctx, kind, cfg, d, j, cluster, log)
}

// HookDeps is what a node's hooks run with: its clock and /proc, and,
// as no agent answers on the hook socket, hook-gpus in process on the
// node's simulated GPUs (same UUIDs, same energy counters).
func HookDeps(now func() time.Time, procRoot string, srv *sim.Server) hook.Deps {
	return hook.Deps{Now: now, ProcRoot: procRoot,
		AskGPUs: hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
			return gpu.OpenInterface(ctx, srv, req.Timeout.Duration)
		})}
}
