package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/store"
)

// ingestConfig is what `gpuacct serve` would be configured with over a
// demo directory: its ledger, the simulated nodes' share as incoming,
// quarantine and archive beside the ledger, no sacct. agentInterval is
// the nodes' agent.interval: ingest holds segments to it.
func ingestConfig(dir, incoming, cluster string, agentInterval time.Duration) config.Config {
	cfg := config.Default()
	cfg.Cluster.Name = cluster
	cfg.Store.Path = filepath.Join(dir, dbFile)
	cfg.Ingest.Incoming = incoming
	cfg.Ingest.Quarantine = filepath.Join(dir, "quarantine")
	cfg.Ingest.Archive = filepath.Join(dir, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	cfg.Ingest.Sacctmgr = ""
	// No requests directory: the demo's ledger takes notes and ignores
	// from nobody but itself (addBooking).
	cfg.Report.Requests = ""
	cfg.Agent.Interval = config.Dur(agentInterval)
	return cfg
}

// ingester is the real ingest over a demo ledger, asking the demo's
// slurmdbd (demoSacctmgr) for the cluster's capacity from since.
func ingester(st *store.Ledger, cfg config.Config, in Info, since time.Time, now func() time.Time, log *slog.Logger) *ingest.Ingester {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// The demo keeps every raw sample of its weeks: weeks that began
	// earlier than store.sample_retention (gpuacct demo --start) would
	// lose theirs at the first pass, and their jobs' charts with them.
	if keep := now().Sub(since) + 24*time.Hour; !since.IsZero() && keep > cfg.Store.SampleRetention.Duration {
		cfg.Store.SampleRetention = config.Dur(keep)
	}
	return ingest.New(ingest.Deps{Store: st, Config: cfg, Log: log, Now: now, UID: os.Getuid(),
		Sacctmgr: demoSacctmgr(in.Cluster, in.Nodes, in.GPUs, since), SacctLocation: time.UTC})
}

// newestJobs bounds the ledger read that numbers the live jobs: the live
// demo's newest jobs are its highest numbered.
const newestJobs = 1000

// nextJobID is the first job id after every job of cluster in the ledger
// and after from: a second `demo serve` on a directory goes on counting
// as Slurm does, so that no job id names two jobs.
func nextJobID(ctx context.Context, st *store.Ledger, cluster string, from uint64) (uint64, error) {
	next := max(from, 1)
	for _, ignored := range []bool{false, true} {
		n := 0
		err := st.Jobs(ctx, store.JobsQuery{From: 0, To: math.MaxInt64, Ignored: ignored, Clusters: []string{cluster}, Sort: store.JobsByStart},
			func(j *store.JobRow) bool {
				if j.JobID >= 0 {
					next = max(next, uint64(j.JobID)+1)
				}
				n++
				return n < newestJobs
			})
		if err != nil {
			return 0, fmt.Errorf("demo: the ledger's newest jobs: %w", err)
		}
	}
	return next, nil
}
