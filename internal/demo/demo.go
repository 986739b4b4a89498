// Package demo runs gpusuite's main job on built-in simulated data: a
// simulated cluster whose nodes run the real agent and prolog/epilog code
// (internal/simcluster), one real ingest pass into a fresh database, then
// the reports an admin reads.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// Command is `gpuacct demo`.
func Command(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run the suite's main job on built-in simulated data",
		UsageText: `gpuacct demo [--dir DIR] [--nodes N] [--gpus N] [--weeks N] [--interval D] [--seed N]

Simulates a cluster for --weeks weeks: --nodes GPU servers of --gpus
simulated H100s, eight users in four teams running busy, barely used, idle
and failing jobs, a GPU lost now and then and energy counters reset. On
every node the real gpuacct agent samples the GPUs every --interval and
the real prolog/epilog record each job; the agents ship their records as
in production. One real ingest pass takes them into a fresh database in
DIR, the totals are checked against the simulation's ground truth, and
then come the weekly team report, the least efficient job's detail and
the paths of two plots. Takes a few seconds.

Examples:
   gpuacct demo
   gpuacct demo --weeks 4 --nodes 8 --gpus 8 --dir /tmp/gpusuite-demo
   gpuacct demo --interval 10s --weeks 1     # the agent's production interval`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "work directory (default: a new temp directory)"},
			&cli.IntFlag{Name: "nodes", Value: 3, Usage: "simulated GPU nodes"},
			&cli.IntFlag{Name: "gpus", Value: 4, Usage: "GPUs per node"},
			&cli.IntFlag{Name: "weeks", Value: 2, Usage: "simulated weeks"},
			&cli.DurationFlag{Name: "interval", Value: time.Minute, Usage: "the agents' sampling interval (whole seconds)"},
			&cli.IntFlag{Name: "jobs-per-day", Value: 8, Usage: "about how many jobs a node runs a day"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "random seed (same seed, same cluster)"},
		},
		Action: func(c *cli.Context) error {
			o, err := options(c)
			if err != nil {
				return err
			}
			return run(c.Context, stdout, o)
		},
	}
}

// shmRoot is where the simulated cluster lives when it can: memory.
var shmRoot = "/dev/shm"

// run runs the pipeline in directories of its own. SIGINT and SIGTERM
// cancel it, so that the deferred removals run instead of the process
// dying with them left behind.
func run(ctx context.Context, stdout io.Writer, o PipelineOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
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
	// The simulated nodes' local disks and the share they ship to live in
	// memory when they can: the database and the plots stay in the demo
	// directory.
	if st, err := os.Stat(shmRoot); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp(shmRoot, "gpusuite-demo-cluster-"); err == nil {
			o.ClusterDir = d
			defer os.RemoveAll(d)
		}
	}
	_, err := Pipeline(ctx, stdout, o)
	if ctx.Err() != nil {
		return fmt.Errorf("demo interrupted; its temporary directories are removed")
	}
	return err
}

// options reads and checks the command line.
func options(c *cli.Context) (PipelineOptions, error) {
	o := PipelineOptions{Dir: c.String("dir"), Nodes: c.Int("nodes"), GPUs: c.Int("gpus"), Weeks: c.Int("weeks"),
		Interval: c.Duration("interval"), JobsPerDay: c.Int("jobs-per-day"), Seed: c.Int64("seed"),
		Width: 120, Start: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}
	if o.Nodes < 1 || o.GPUs < 1 || o.GPUs > 64 || o.Weeks < 1 || o.JobsPerDay < 1 {
		return o, fmt.Errorf("--nodes, --weeks and --jobs-per-day must be at least 1 and --gpus within 1..64")
	}
	if o.Interval < time.Second || o.Interval%time.Second != 0 {
		return o, fmt.Errorf("--interval %s is not a whole number of seconds", o.Interval)
	}
	return o, nil
}
