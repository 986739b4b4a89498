// Package democmd is `gpuacct demo`'s command line; the demo is internal/demo.
package democmd

import (
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/demo"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// Command is `gpuacct demo` and `gpuacct demo serve`.
func Command(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run the suite's main job on built-in simulated data",
		UsageText: `gpuacct demo [--dir DIR] [--nodes N] [--gpus N] [--weeks N] [--start T] [--interval D] [--seed N]

Simulates a cluster for the --weeks weeks that end now (or that begin at
--start, UTC, ending by now): --nodes GPU servers of --gpus
simulated H100s, eight users in four teams running busy, barely used, idle
and failing jobs, a GPU lost now and then and energy counters reset. On
every node the real gpuacct agent samples the GPUs every --interval and
the real prolog/epilog record each job; the agents ship their records as
in production. One real ingest pass takes them into a fresh database in
DIR, the totals are checked against the simulation's ground truth, and
then come the weekly team report, the least efficient job's detail and
the paths of two plots. Then the nodes come to life for one sample
cycle and leave their live snapshots in DIR/live (their jobs ingested
too) and the simulated Slurm's view in DIR/slurm.json, a GPU is booked in
the ledger, and the demo prints the one command that serves the live
board (gpuacct demo serve) and the gpuacct free and status commands that
read the same (--slurm-file DIR/slurm.json). The reports' and the
dashboard's default windows (the last 7 days) and gpuacct check all read
data. Takes a few seconds of CPU (docs/performance.md).

Examples:
   gpuacct demo
   gpuacct demo --dir /tmp/gpusuite-demo
   gpuacct demo --weeks 4 --nodes 8 --gpus 8 --dir /tmp/gpusuite-demo
   gpuacct demo --interval 10s --weeks 1     # the agent's production interval
   gpuacct demo --start 2026-10-05 --weeks 5 # the same weeks on every run`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "work directory (default: a new temp directory)"},
			&cli.IntFlag{Name: "nodes", Value: demo.Defaults().Nodes, Usage: "simulated GPU nodes"},
			&cli.IntFlag{Name: "gpus", Value: demo.Defaults().GPUs, Usage: "GPUs per node"},
			&cli.IntFlag{Name: "weeks", Value: demo.Defaults().Weeks, Usage: "simulated weeks"},
			&cli.StringFlag{Name: "start", Usage: "when the simulated weeks begin, UTC: " + timespec.Formats + " (default: --weeks before now)"},
			&cli.DurationFlag{Name: "interval", Value: demo.Defaults().Interval, Usage: "the agents' sampling interval (whole seconds)"},
			&cli.IntFlag{Name: "jobs-per-day", Value: demo.Defaults().JobsPerDay, Usage: "about how many jobs a node runs a day"},
			&cli.Int64Flag{Name: "seed", Value: demo.Defaults().Seed, Usage: "random seed (same seed, same cluster)"},
		},
		Subcommands: []*cli.Command{serveCommand(stdout, stderr, getenv)},
		Action: func(c *cli.Context) error {
			o, err := options(c)
			if err != nil {
				return err
			}
			// The printed serve command must run as pasted: the real path
			// of this binary, not a name PATH may not find.
			if exe, err := os.Executable(); err == nil {
				o.Program = exe
			}
			batchGC(getenv)
			return demo.Run(c.Context, stdout, o)
		},
	}
}

// demoGCPercent is the collector's GOGC for the demo: a run of seconds
// whose heap stays under 100 MB may grow five times between collections
// rather than twice; it makes the demo a fifth faster.
const demoGCPercent = 400

// batchGC sets demoGCPercent unless GOGC says otherwise.
func batchGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(demoGCPercent)
	}
}

// options reads and checks the command line.
func options(c *cli.Context) (demo.PipelineOptions, error) {
	o := demo.Defaults()
	o.Dir, o.Nodes, o.GPUs, o.Weeks = c.String("dir"), c.Int("nodes"), c.Int("gpus"), c.Int("weeks")
	o.Interval, o.JobsPerDay, o.Seed = c.Duration("interval"), c.Int("jobs-per-day"), c.Int64("seed")
	if s := c.String("start"); s != "" {
		t, err := timespec.Parse(s, time.Now(), time.UTC)
		if err != nil {
			return o, cliwire.Usagef("--start: %v", err)
		}
		o.Start = t
	}
	return o, o.Check()
}
