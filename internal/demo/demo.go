// Package demo runs gpusuite's main job on built-in simulated data: a
// simulated cluster whose nodes run the real agent and prolog/epilog code
// (internal/sim/simcluster), one real ingest pass into a fresh database,
// then the reports an admin reads. Its command line is gpuacct/demo.
//
// Files: demo.go (options), pipeline.go (the simulated fortnight through
// ingest to the reports), layout.go (nodes and their roles), ingest.go,
// notes.go (a booking on the board), dir.go (what a demo directory
// holds), live.go, serve.go (the live cluster behind gpuacct demo serve),
// slurmview.go, slurmfile.go, slurmdbd.go (the synthetic Slurm view and
// accounting).
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Defaults are the demo's options when none is given: the simulated
// weeks end as the demo runs (Start zero). A sample every 3 minutes
// draws a job's hour in 20 points and keeps the fortnight's simulation
// and ingest to a few seconds on two cores (docs/performance.md);
// --interval 10s is production's.
func Defaults() PipelineOptions {
	return PipelineOptions{Nodes: 4, GPUs: 4, Weeks: 2, Interval: 3 * time.Minute, JobsPerDay: 8, Seed: 1, Width: 120}
}

// Check says what is out of range in o, naming the command line's flags.
func (o PipelineOptions) Check() error {
	if o.Nodes < 1 || o.GPUs < 1 || o.GPUs > 64 || o.Weeks < 1 || o.JobsPerDay < 1 {
		return fmt.Errorf("--nodes, --weeks and --jobs-per-day must be at least 1 and --gpus within 1..64")
	}
	if o.Interval < time.Second || o.Interval%time.Second != 0 {
		return fmt.Errorf("--interval %s is not a whole number of seconds", o.Interval)
	}
	return nil
}

// memRoot is where the simulated cluster lives when it can: memory.
const memRoot = "/dev/shm"

// workRoot is root when set, else memRoot when this machine has it, else
// "" (the caller's own default).
func workRoot(root string) string {
	if root != "" {
		return root
	}
	if st, err := os.Stat(memRoot); err == nil && st.IsDir() {
		return memRoot
	}
	return ""
}

// Run runs the pipeline in directories of its own. SIGINT and SIGTERM
// cancel it, so that the deferred removals run instead of the process
// dying with them left behind.
func Run(ctx context.Context, stdout io.Writer, o PipelineOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The simulated nodes' local disks and the share they ship to live in
	// memory when they can: the database and the plots stay in the demo
	// directory. Without /dev/shm they go under Dir.
	if root := workRoot(o.WorkRoot); root != "" {
		d, err := os.MkdirTemp(root, "gpusuite-demo-cluster-")
		switch {
		case err == nil:
			o.ClusterDir = d
			defer os.RemoveAll(d)
		case o.WorkRoot != "":
			return fmt.Errorf("make the simulated cluster's directory: %w", err)
		}
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "gpusuite-demo-")
		if err != nil {
			return fmt.Errorf("make demo directory: %w", err)
		}
		o.Dir = d
		// An interrupted run's half-made directory is of no use.
		defer func() {
			if ctx.Err() != nil {
				os.RemoveAll(d)
			}
		}()
	}
	_, err := Pipeline(ctx, stdout, o)
	if ctx.Err() != nil {
		return fmt.Errorf("demo interrupted; its temporary directories are removed")
	}
	return err
}
