// Command scale generates a year of a cluster of N GPUs as rollups, for
// timing reports at 128, 1,024 and 10,000 GPUs (bench/scale.sh;
// docs/performance.md, "scale"). The jobs are bench/year's
// (gendata.YearNodeJobs); their hours go into the rollups through
// store.Batch.AddRollupHours a day at a time, never as records or
// samples, so a 10,000-GPU year fits a 2-core machine. It is a
// benchmark, not part of make test.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/footprint"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		var u usageError
		if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
			os.Exit(exitcode.Usage)
		}
		os.Exit(exitcode.Failure)
	}
}

// usageError is a flag's value refused: exit 2.
type usageError struct{ error }

// job is a planned job, kept small: a 10,000-GPU year plans 20 M.
type job struct {
	start, end int64
	gpus       uint8
	util       uint8
	dims       uint32 // index into dims
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	db := fs.String("db", "", "the SQLite ledger to make (must not exist)")
	gpus := fs.Int("gpus", 1024, "GPUs in the cluster (8 a node)")
	days := fs.Int("days", 365, "days of jobs, ending at -end")
	endFlag := fs.String("end", "2027-01-01", "end of the data set, YYYY-MM-DD (UTC, exclusive)")
	jobs := fs.Int("jobs-per-node-day", 44, "about how many jobs a server runs a day (bench/year's default)")
	seed := fs.Int64("seed", 2026, "random seed")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *db == "" {
		return usageError{errors.New("-db: none given: name the SQLite ledger to make, e.g. -db /var/tmp/scale.db")}
	}
	if _, err := os.Stat(*db); err == nil {
		return usageError{fmt.Errorf("-db %s exists: remove it to make a new one", *db)}
	}
	if *gpus < 8 || *days < 1 || *jobs < 1 {
		return usageError{fmt.Errorf("-gpus %d, -days %d, -jobs-per-node-day %d: give at least 8 GPUs, 1 day and 1 job", *gpus, *days, *jobs)}
	}
	end, err := time.Parse("2006-01-02", *endFlag)
	if err != nil {
		return usageError{fmt.Errorf("-end %q: give a date as YYYY-MM-DD: %w", *endFlag, err)}
	}
	nodes := max(*gpus/8, 1)
	// Users and accounts grow with the cluster, as a site's do.
	o := gendata.YearOptions{Cluster: "c1", Nodes: nodes, GPUsPerNode: 8, End: end, Days: *days, JobsPerNodeDay: *jobs,
		Users: max(300**gpus/1000, 30), Accounts: max(40**gpus/1000, 8), Partitions: 4, Seed: *seed}
	fmt.Fprintf(out, "# %s, %d CPUs: %d nodes × 8 GPUs, %d days to %s, ~%d jobs/node/day, %d users, %d accounts\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), nodes, *days, end.Format("2006-01-02"), *jobs, o.Users, o.Accounts)
	g0 := time.Now()
	plan, dims := planJobs(o)
	var nJobs int
	for _, js := range plan {
		nJobs += len(js)
	}
	fmt.Fprintf(out, "planned %d jobs in %s\n", nJobs, time.Since(g0).Round(time.Millisecond))

	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: *db})
	if err != nil {
		return err
	}
	defer st.Close()
	w0 := time.Now()
	ids, err := makeNodes(ctx, st, nodes, end)
	if err != nil {
		return err
	}
	start := end.AddDate(0, 0, -*days).Unix()
	cursor := make([]int, nodes)
	var hs []store.RollupHour
	var alloc int64
	for day := start; day < end.Unix(); day += 86400 {
		hs = hs[:0]
		for n, js := range plan {
			// Jobs are sorted by start: skip those that ended before the
			// day (none runs longer than maxJob).
			for cursor[n] < len(js) && js[cursor[n]].start+maxJob < day {
				cursor[n]++
			}
			for _, j := range js[cursor[n]:] {
				if j.start >= day+86400 {
					break
				}
				hs = appendHours(hs, j, ids[n], dims[j.dims], day, &alloc)
			}
		}
		b, err := st.Begin(ctx, end)
		if err != nil {
			return err
		}
		if err := b.AddRollupHours(hs); err != nil {
			b.Rollback()
			return fmt.Errorf("day %s: %w", time.Unix(day, 0).UTC().Format(time.DateOnly), err)
		}
		if err := b.Commit(); err != nil {
			return err
		}
	}
	took := time.Since(w0)
	rows, err := footprint.Rows(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rollups written in %s: %.0f GPU-hours allocated; DB %.2f GiB; rows: %s\n",
		took.Round(time.Second), float64(alloc)/3600, float64(st.Size())/(1<<30), rows)
	return nil
}

// maxJob bounds a planned job's length (bench/year's longest is under
// 1.8 × 4/3 of a day at one job a block a day).
const maxJob = 3 * 86400

// planJobs plans every node's jobs, each node's sorted by start, and the
// distinct dims they name.
func planJobs(o gendata.YearOptions) ([][]job, []store.Dims) {
	index := map[store.Dims]uint32{}
	var dims []store.Dims
	plan := make([][]job, o.Nodes)
	for n := range o.Nodes {
		gs := gendata.YearNodeJobs(o, n)
		js := make([]job, 0, len(gs))
		for _, g := range gs {
			d := store.Dims{Cluster: o.Cluster, User: g.User, Account: g.Account, Partition: g.Partition}
			i, ok := index[d]
			if !ok {
				i = uint32(len(dims))
				index[d] = i
				dims = append(dims, d)
			}
			js = append(js, job{start: g.Start, end: min(g.End, g.Start+maxJob), gpus: uint8(len(g.GPUs)), util: uint8(g.Util), dims: i})
		}
		sort.Slice(js, func(a, b int) bool { return js[a].start < js[b].start })
		plan[n] = js
	}
	return plan, dims
}

// makeNodes records the nodes (reports name them) and returns their ids.
func makeNodes(ctx context.Context, st *store.Ledger, nodes int, now time.Time) ([]int64, error) {
	b, err := st.Begin(ctx, now)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, nodes)
	for n := range nodes {
		if ids[n], err = b.Node("c1", gendata.NodeName(n)); err != nil {
			b.Rollback()
			return nil, err
		}
	}
	return ids, b.Commit()
}

// appendHours adds the hours job j spends in the UTC day from day: as
// the ledger counts them, allocated = GPUs × seconds, used = allocated ×
// utilization, idle where the job never used its GPUs, power 60 W idle
// to 660 W busy; the job counts once, in its start hour.
func appendHours(hs []store.RollupHour, j job, node int64, d store.Dims, day int64, alloc *int64) []store.RollupHour {
	lo, hi := max(j.start, day), min(j.end, day+86400)
	for h := lo / 3600; h*3600 < hi; h++ {
		s := min(hi, (h+1)*3600) - max(lo, h*3600)
		if s <= 0 {
			continue
		}
		a := int64(j.gpus) * s
		u := store.Usage{AllocS: a, UsedS: float64(a) * float64(j.util) / 100, SampleS: float64(a),
			EnergyMJ: a * (60 + 6*int64(j.util)) * 1000}
		if j.util == 0 {
			u.IdleS = float64(a)
		}
		if j.start/3600 == h {
			u.Jobs = 1
		}
		*alloc += a
		hs = append(hs, store.RollupHour{Dims: d, Node: node, Model: "h100", Hour: h, Usage: u})
	}
	return hs
}
