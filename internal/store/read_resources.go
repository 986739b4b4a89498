package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxResourceRows bounds the runs one Resources call reads.
const MaxResourceRows = 1000

// ResourcesSchema is the first schema with job_resources (job_usage
// before 0018): a reader that does not migrate reads no run's resources
// from an older ledger.
const ResourcesSchema = 18

// Resources reads the resources of the given job runs (JobRow.Row); a run
// sacct has not answered for is absent from the map.
func (s *Ledger) Resources(ctx context.Context, rows []int64) (map[int64]Resources, error) {
	type resourcesRow struct {
		row int64
		u   Resources
	}
	got, err := readRuns(ctx, s, "resources", `SELECT job, alloc_cpus, nodes, elapsed_s, time_limit_s, req_mem, total_cpu_ms, max_rss FROM job_resources WHERE 1 = 1`,
		"job", rows, func(r batchRows, ur *resourcesRow) error {
			var elapsed int64
			var limit, mem, cpu, rss sql.NullInt64
			err := r.Scan(&ur.row, &ur.u.AllocCPUs, &ur.u.Nodes, &elapsed, &limit, &mem, &cpu, &rss)
			ur.u.Elapsed = time.Duration(elapsed) * time.Second
			ur.u.TimeLimit, ur.u.ReqMem, ur.u.TotalCPU, ur.u.MaxRSS = figure(limit), figure(mem), figure(cpu), figure(rss)
			return err
		})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]Resources, len(got))
	for _, g := range got {
		out[g.row] = g.u
	}
	return out, nil
}

// readRuns reads sel (a query ending in a WHERE clause) for the given job
// runs, col naming their column: at most MaxResourceRows runs at once,
// none asks nothing. what names the figures in errors.
func readRuns[T any](ctx context.Context, s *Ledger, what, sel, col string, rows []int64, scan func(r batchRows, v *T) error) ([]T, error) {
	if len(rows) > MaxResourceRows {
		return nil, fmt.Errorf("%s of %d job runs: at most %d at once", what, len(rows), MaxResourceRows)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var q strings.Builder
	var args []any
	q.WriteString(sel)
	inList(&q, &args, col, rows)
	res, err := s.db.QueryContext(ctx, q.String(), args...)
	got, err := collect(res, err, scan)
	if err != nil {
		return nil, fmt.Errorf("%s of job runs: %w", what, translate(err))
	}
	return got, nil
}

func figure(v sql.NullInt64) Figure { return Figure{Value: v.Int64, Known: v.Valid} }

// Ratio is a share (1 is all of it) that is known only when both of its
// figures are.
type Ratio struct {
	Value float64
	Known bool
}

// Efficiency is how much of its allocation a job run used, the way
// Slurm's seff counts it. The formulas live here, beside the read, until
// the report package (the figures' natural home) takes them.
type Efficiency struct {
	// CPU is TotalCPU / (AllocCPUS × Elapsed).
	CPU Ratio
	// Memory is the peak RSS of one task (MaxRSS) / the memory asked for
	// per node: seff's figure for a job of one task per node.
	Memory Ratio
	// Time is Elapsed / the time limit.
	Time Ratio
}

// Efficiency computes u's shares; a share whose figures were not
// recorded (or whose whole is 0) is not known.
func (u Resources) Efficiency() Efficiency {
	var e Efficiency
	elapsed := u.Elapsed.Seconds()
	if u.TotalCPU.Known && u.AllocCPUs > 0 && elapsed > 0 {
		e.CPU = Ratio{float64(u.TotalCPU.Value) / 1000 / (float64(u.AllocCPUs) * elapsed), true}
	}
	if u.MaxRSS.Known && u.ReqMem.Known && u.ReqMem.Value > 0 {
		e.Memory = Ratio{float64(u.MaxRSS.Value) / float64(u.ReqMem.Value), true}
	}
	if u.TimeLimit.Known && u.TimeLimit.Value > 0 {
		e.Time = Ratio{elapsed / float64(u.TimeLimit.Value), true}
	}
	return e
}

// Under FarOff of what it asked for a run is far off, and what it would
// do with holds its peak with Headroom: jobstats' measures, which gpuacct
// job and the job's end mail both suggest by.
const (
	FarOff   = 0.5
	Headroom = 1.2
)

// Ask is what a run far off its allocation would do with next time, as
// sbatch reads it; a zero field: that figure is not far off, or not known.
type Ask struct {
	// Cores hold the cores the run kept busy (Busy, on average) with
	// headroom.
	Cores int64
	Busy  float64
	// Mem holds the peak RSS with headroom, in whole GiB, whole MiB under
	// one ("12G", "640M").
	Mem string
	// Time holds the elapsed time with headroom, rounded up to a limit
	// people ask for (5 minutes under an hour, 15 under a day, whole hours
	// beyond), as [days-]hours:minutes:seconds.
	Time string
}

// Ask is what u's run would do with, by the shares of Efficiency.
func (u Resources) Ask() Ask {
	var a Ask
	e := u.Efficiency()
	elapsed := u.Elapsed.Seconds()
	if e.CPU.Known && e.CPU.Value < FarOff {
		// Known, the share has a whole: elapsed is over 0.
		busy := float64(u.TotalCPU.Value) / 1000 / elapsed
		if n := int64(math.Max(1, math.Ceil(busy*Headroom))); n < u.AllocCPUs {
			a.Cores, a.Busy = n, busy
		}
	}
	if e.Memory.Known && e.Memory.Value < FarOff {
		want := float64(u.MaxRSS.Value) * Headroom
		a.Mem = fmt.Sprintf("%dM", int64(math.Ceil(want/(1<<20))))
		if want >= 1<<30 {
			a.Mem = fmt.Sprintf("%dG", int64(math.Ceil(want/(1<<30))))
		}
	}
	if e.Time.Known && e.Time.Value < FarOff && elapsed > 0 {
		a.Time = timeAsk(time.Duration(math.Ceil(elapsed*Headroom)) * time.Second)
	}
	return a
}

// timeAsk is d rounded up to a limit people ask for, as --time reads it.
func timeAsk(d time.Duration) string {
	unit := time.Hour
	if d < time.Hour {
		unit = 5 * time.Minute
	} else if d < 24*time.Hour {
		unit = 15 * time.Minute
	}
	s := int64((d + unit - 1) / unit * unit / time.Second)
	hms := fmt.Sprintf("%02d:%02d:%02d", s/3600%24, s/60%60, s%60)
	if s >= 86400 {
		return fmt.Sprintf("%d-%s", s/86400, hms)
	}
	return hms
}

// JobGPUMemPeaks is, per given job run, the highest memory peak of one of
// its GPUs as a share of that GPU's memory (1 is all of it); a run whose
// GPUs gave no peak or total is absent. Like Resources, at most
// MaxResourceRows runs at once.
func (s *Ledger) JobGPUMemPeaks(ctx context.Context, rows []int64) (map[int64]float64, error) {
	type peak struct {
		row        int64
		max, total float64
	}
	// The share is computed here, not in SQL: the MiB columns are integers
	// on PostgreSQL, where their quotient would be one too.
	got, err := readRuns(ctx, s, "GPU memory", `SELECT jg.job, jg.mem_max_mib, coalesce(jg.mem_total_mib, g.mem_total_mib) FROM job_gpus jg JOIN gpus g ON g.id = jg.gpu_id
 WHERE jg.mem_max_mib IS NOT NULL AND coalesce(jg.mem_total_mib, g.mem_total_mib) > 0`,
		"jg.job", rows, func(r batchRows, p *peak) error { return r.Scan(&p.row, &p.max, &p.total) })
	if err != nil {
		return nil, err
	}
	out := make(map[int64]float64, len(got))
	for _, p := range got {
		v := p.max / p.total
		if cur, ok := out[p.row]; !ok || v > cur {
			out[p.row] = v
		}
	}
	return out, nil
}
