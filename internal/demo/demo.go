// Package demo runs gpusuite's main job on built-in simulated data: a small
// cluster of simulated GPU nodes whose jobs go through the real hook code,
// then shows what was recorded.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/gpu/sim"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
)

// Options shape the simulated cluster.
type Options struct {
	Dir   string
	Nodes int
	GPUs  int
	Jobs  int
	Seed  int64
	Start time.Time
}

// Job is one simulated job as both its events recorded it.
type Job struct {
	Start, End record.Event
}

var teams = map[string][]string{"vision": {"alice", "bob"}, "nlp": {"carol", "dave"}, "robotics": {"erin"}}

// Simulate runs opts.Jobs jobs through the real prolog/epilog code and
// returns them as recorded in the spool.
func Simulate(ctx context.Context, opts Options, log *slog.Logger) ([]Job, error) {
	rng := rand.New(rand.NewSource(opts.Seed))
	cfg := config.Default()
	cfg.Cluster.Name = "demo"
	cfg.Spool.Dir = filepath.Join(opts.Dir, "spool")
	cfg.GPU.Backend = "simulated"
	cfg.GPU.Simulated.Count = opts.GPUs

	var users []string
	account := map[string]string{}
	for team, us := range teams {
		for _, u := range us {
			users = append(users, u)
			account[u] = team
		}
	}
	sort.Strings(users)

	now := opts.Start
	clock := func() time.Time { return now }
	free := make([]time.Time, opts.Nodes*opts.GPUs) // when each GPU is free again
	for id := 1; id <= opts.Jobs; id++ {
		user := users[rng.Intn(len(users))]
		n := []int{1, 1, 2, 4}[rng.Intn(4)]
		if n > opts.GPUs {
			n = opts.GPUs
		}
		node := rng.Intn(opts.Nodes)
		// The job starts when n GPUs of its node are free, as the scheduler
		// would start it: the n GPUs free soonest.
		order := make([]int, opts.GPUs)
		for g := range order {
			order[g] = g
		}
		sort.SliceStable(order, func(a, b int) bool { return free[node*opts.GPUs+order[a]].Before(free[node*opts.GPUs+order[b]]) })
		minors := append([]int(nil), order[:n]...)
		sort.Ints(minors)
		submit := now
		start := now
		for _, m := range minors {
			if t := free[node*opts.GPUs+m]; t.After(start) {
				start = t
			}
		}
		dur := time.Duration(10+rng.Intn(240)) * time.Minute
		exit := "0:0"
		if rng.Intn(8) == 0 {
			exit = strconv.Itoa(1+rng.Intn(3)) + ":0"
		}
		for _, m := range minors {
			free[node*opts.GPUs+m] = start.Add(dur)
		}
		env := map[string]string{
			"SLURM_JOB_ID": strconv.Itoa(id), "SLURM_JOB_USER": user, "SLURM_JOB_UID": strconv.Itoa(1000 + indexOf(users, user)),
			"SLURM_JOB_GID": "1000", "SLURM_JOB_ACCOUNT": account[user], "SLURM_JOB_PARTITION": "gpu",
			"SLURMD_NODENAME": fmt.Sprintf("gpu%02d", node+1), "SLURM_CLUSTER_NAME": "demo",
			"SLURM_JOB_GPUS": joinInts(minors), "SLURM_JOB_RESTART_COUNT": "0",
		}
		getenv := func(k string) string { return env[k] }
		deps := hook.Deps{Getenv: getenv, Now: clock, OpenGPU: func(ctx context.Context, cfg config.Config, node string) (*gpu.Library, error) {
			s, err := sim.New(sim.Options{Node: node, Count: cfg.GPU.Simulated.Count, Model: cfg.GPU.Simulated.Model, Now: clock})
			if err != nil {
				return nil, err
			}
			return gpu.OpenInterface(ctx, s, time.Second)
		}}
		now = start
		env["SLURM_SCRIPT_CONTEXT"] = "prolog_slurmd"
		if _, err := hook.Run(ctx, record.JobStart, cfg, deps, log); err != nil {
			return nil, fmt.Errorf("prolog of job %d: %w", id, err)
		}
		now = start.Add(dur)
		env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
		env["SLURM_JOB_EXIT_CODE2"] = exit
		if _, err := hook.Run(ctx, record.JobEnd, cfg, deps, log); err != nil {
			return nil, fmt.Errorf("epilog of job %d: %w", id, err)
		}
		now = submit.Add(time.Duration(1+rng.Intn(20)) * time.Minute)
	}
	return readJobs(cfg.Spool.Dir)
}

func readJobs(dir string) ([]Job, error) {
	names, err := filepath.Glob(filepath.Join(dir, "event.*.json"))
	if err != nil {
		return nil, err
	}
	byKey := map[uint64]*Job{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read event: %w", err)
		}
		var ev record.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("decode %q: %w", n, err)
		}
		j := byKey[ev.Job.ID]
		if j == nil {
			j = &Job{}
			byKey[ev.Job.ID] = j
		}
		if ev.Kind == record.JobStart {
			j.Start = ev
		} else {
			j.End = ev
		}
	}
	var jobs []Job
	for _, j := range byKey {
		jobs = append(jobs, *j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Start.Job.ID < jobs[b].Start.Job.ID })
	return jobs, nil
}

// AllocatedGPUSeconds is GPUs × (end − start), the accounting definition.
func (j Job) AllocatedGPUSeconds() float64 {
	return float64(len(j.Start.GPUs)) * j.End.Time.Sub(j.Start.Time).Seconds()
}

// EnergyKWh sums the energy counter deltas of the job's GPUs.
func (j Job) EnergyKWh() float64 {
	var mj uint64
	for i, g := range j.Start.GPUs {
		if i < len(j.End.GPUs) && g.EnergyMJ != nil && j.End.GPUs[i].EnergyMJ != nil && *j.End.GPUs[i].EnergyMJ >= *g.EnergyMJ {
			mj += *j.End.GPUs[i].EnergyMJ - *g.EnergyMJ
		}
	}
	return float64(mj) / 3.6e9
}

// Print writes the recorded jobs as a table, then totals per team.
func Print(w io.Writer, jobs []Job) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tUSER\tTEAM\tNODE\tGPUS (minor→uuid)\tSTART\tELAPSED\tEXIT\tGPU-H\tkWh")
	type tot struct{ gpuh, kwh float64 }
	team := map[string]*tot{}
	for _, j := range jobs {
		var g []string
		for _, id := range j.Start.GPUs {
			g = append(g, fmt.Sprintf("%d→%s", id.Minor, shortUUID(id.UUID)))
		}
		exit := "-"
		if j.End.Job.Exit != nil {
			exit = fmt.Sprintf("%d:%d", j.End.Job.Exit.Code, j.End.Job.Exit.Signal)
		}
		gpuh := j.AllocatedGPUSeconds() / 3600
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.3f\n", j.Start.Job.ID, j.Start.Job.User, j.Start.Job.Account,
			j.Start.Node, strings.Join(g, " "), j.Start.Time.Format("01-02 15:04"), j.End.Time.Sub(j.Start.Time).Round(time.Minute), exit, gpuh, j.EnergyKWh())
		t := team[j.Start.Job.Account]
		if t == nil {
			t = &tot{}
			team[j.Start.Job.Account] = t
		}
		t.gpuh += gpuh
		t.kwh += j.EnergyKWh()
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TEAM\tALLOCATED GPU-H\tkWh\t")
	var names []string
	for n := range team {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%.2f\t%.3f\t\n", n, team[n].gpuh, team[n].kwh)
	}
	tw.Flush()
}

func shortUUID(u string) string {
	if len(u) > 12 {
		return u[:12] + "…"
	}
	if u == "" {
		return "?"
	}
	return u
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// Command is `gpuacct demo`.
func Command(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run the suite's main job on built-in simulated data",
		UsageText: `gpuacct demo [--dir DIR] [--jobs N] [--weeks N]

Simulates a cluster of GPU nodes whose jobs go through the real prolog and
epilog code, then prints what was recorded and the GPU-hours per team.
Then the whole pipeline over --weeks simulated weeks: events from the real
hooks, samples and job × GPU aggregates as the agent ships them, one real
ingest pass into a fresh database, the weekly team report, the least
efficient job's detail and two plot files.

Examples:
   gpuacct demo
   gpuacct demo --jobs 200 --nodes 8 --dir /tmp/gpusuite-demo`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "work directory (default: a new temp directory)"},
			&cli.IntFlag{Name: "jobs", Value: 24, Usage: "number of simulated jobs"},
			&cli.IntFlag{Name: "nodes", Value: 3, Usage: "simulated GPU nodes"},
			&cli.IntFlag{Name: "gpus", Value: 4, Usage: "GPUs per node"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "random seed (same seed, same cluster)"},
			&cli.IntFlag{Name: "weeks", Value: 2, Usage: "simulated weeks of the whole pipeline (hooks, agent records, ingest, reports); 0 skips it"},
		},
		Action: func(c *cli.Context) error {
			if c.Int("jobs") < 1 || c.Int("nodes") < 1 || c.Int("gpus") < 1 || c.Int("gpus") > 64 {
				return fmt.Errorf("--jobs and --nodes must be at least 1 and --gpus within 1..64")
			}
			dir := c.String("dir")
			if dir == "" {
				d, err := os.MkdirTemp("", "gpusuite-demo-")
				if err != nil {
					return fmt.Errorf("make demo directory: %w", err)
				}
				dir = d
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			jobs, err := Simulate(c.Context, Options{Dir: dir, Nodes: c.Int("nodes"), GPUs: c.Int("gpus"), Jobs: c.Int("jobs"),
				Seed: c.Int64("seed"), Start: time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)}, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Recorded by the real prolog/epilog on %d simulated nodes × %d GPUs (spool: %s):\n\n", c.Int("nodes"), c.Int("gpus"), filepath.Join(dir, "spool"))
			Print(stdout, jobs)
			if c.Int("weeks") <= 0 {
				return nil
			}
			fmt.Fprintln(stdout)
			return Pipeline(c.Context, stdout, PipelineOptions{Dir: filepath.Join(dir, "pipeline"), Nodes: c.Int("nodes"), GPUs: c.Int("gpus"),
				Weeks: c.Int("weeks"), Seed: c.Int64("seed"), Width: 120})
		},
	}
}
