package report

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// maxEffRuns bounds the runs `gpuacct jobs` reads to sort (invariant 9):
// a wider selection is refused, not cut at an arbitrary run.
const maxEffRuns = MaxLimit

// JobStates are the states a run ends in (or runs in) as the ledger keeps
// Slurm's, lower case; --state takes these.
var JobStates = []string{"running", "completed", "failed", "cancelled", "timeout", "out_of_memory", "node_fail", "preempted", "boot_fail",
	"deadline", "requeued", "suspended"}

// EffSorts are the orders --sort takes, and what each says in the title.
var EffSorts = map[string]string{"start": "newest first", "elapsed": "longest first", "time": "lowest time efficiency first",
	"cpu": "lowest CPU efficiency first", "mem": "lowest memory efficiency first", "gpu": "lowest GPU efficiency first", "idle": "most idle first"}

// EffQuery selects the runs of `gpuacct jobs`, reportseff's question:
// how well did each of these runs use what it asked for.
type EffQuery struct {
	Window timespec.Window
	Filter Filter
	// Teams, with their Mapping, are --teams, as JobsQuery's.
	Teams   []string
	Mapping *teams.Mapping
	Scope   Scope
	// States are lower-case JobStates; none: every state.
	States []string
	// Array, when not 0, selects the tasks of that array job only.
	Array int64
	Sort  string
	Limit int
	Now   time.Time
	// Lang is the language of the terminal table's title, headings,
	// notes and total (nil: English); the machine formats' keys and
	// values are never translated.
	Lang *i18n.Printer
}

// effRun is one run with its figures.
type effRun struct {
	j      JobRow
	u      *store.Resources
	gpuMem *float64
	e      store.Efficiency
}

// JobEfficiencies is `gpuacct jobs`: one row per run with its time, CPU,
// memory and GPU efficiency, GPU memory peak and idle share, a TOTAL and
// how many more runs matched than --limit shows.
func (d *Ledger) JobEfficiencies(ctx context.Context, q EffQuery) (*table.Table, error) {
	order, ok := EffSorts[q.Sort]
	if !ok {
		return nil, badInput("--sort %q is not start, elapsed, time, cpu, mem, gpu or idle", q.Sort)
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return nil, badInput("--limit %d is not from 1 to %d", q.Limit, MaxLimit)
	}
	if q.Limit == 0 {
		q.Limit = 50
	}
	runs, err := d.effRuns(ctx, q)
	if err != nil {
		return nil, err
	}
	sortRuns(runs, q.Sort, q.Now)
	tr := q.Lang
	if tr == nil {
		tr = i18n.Plain()
	}
	t := effTable(q.Scope.Several(), tr)
	var tot effTotals
	for i := range runs {
		tot.add(&runs[i], q.Now)
		if i < q.Limit {
			t.Rows = append(t.Rows, effRow(&runs[i], q.Now, q.Scope.Several()))
		}
	}
	more := len(runs) - len(t.Rows)
	if len(runs) > 0 {
		t.Rows = append(t.Rows, tot.row(len(runs), q.Scope.Several(), tr))
	}
	// order is one of EffSorts' values, each in the catalogue
	on := "" // the clusters, where the ledger holds several
	if st := q.Scope.Title(); st != "" {
		on = tr.T(" on %s", st)
	}
	t.Title = tr.T("Runs%s between %s and %s (%s), %s, at most %d", on, tr.Time(q.Window.Start, "2006-01-02 15:04"),
		tr.Time(q.Window.End, "2006-01-02 15:04"), zoneName(q.Window.Start.Location(), q.Window.Start), tr.Text(order), q.Limit)
	t.Meta = windowMeta("jobs", q.Window, q.Scope, table.KV{Key: "runs", Value: int64(len(runs))}, table.KV{Key: "more", Value: int64(more)})
	t.Notes = []string{tr.Text("- = not recorded (JobAcctGatherType is none), no limit, no --mem or no GPU samples; TIME%, CPU% and MEM% as seff counts them"),
		tr.T("details and suggestions: gpuacct job JOBID")}
	if more > 0 {
		t.Notes = append([]string{tr.T("%d more runs match: raise --limit or narrow the filters", more)}, t.Notes...)
	}
	return t, nil
}

// effRuns are the runs q selects (its window, filter, states and array
// job) with their resources and GPU memory peaks, in the store's order; more
// than maxEffRuns is refused.
func (d *Ledger) effRuns(ctx context.Context, q EffQuery) ([]effRun, error) {
	states := map[string]bool{}
	for _, s := range q.States {
		states[s] = true
	}
	var runs []effRun
	// arrayJob: a task of the array was seen; plain: the id is a job's
	// that is no array's.
	arrayJob, plain := false, false
	jq := JobsQuery{Window: q.Window, Filter: q.Filter, Teams: q.Teams, Mapping: q.Mapping, Scope: q.Scope, Now: q.Now, Sort: "start"}
	var tooMany bool
	err := d.Jobs(ctx, jq, func(j *JobRow) bool {
		if q.Array != 0 {
			if j.ArrayJobID == nil || *j.ArrayJobID != q.Array {
				plain = plain || j.JobID == q.Array
				return true
			}
			arrayJob = true
		}
		if len(states) > 0 && !states[j.State] {
			return true
		}
		if len(runs) == maxEffRuns {
			tooMany = true
			return false
		}
		runs = append(runs, effRun{j: *j})
		return true
	})
	if err != nil {
		return nil, err
	}
	if tooMany {
		return nil, badInput("more than %d runs match: narrow the window or the filters", maxEffRuns)
	}
	switch {
	case q.Array != 0 && !arrayJob && plain:
		return nil, badInput("--array %d: job %d is not an array job", q.Array, q.Array)
	case q.Array != 0 && !arrayJob:
		return nil, badInput("--array %d: no array job %d in the window", q.Array, q.Array)
	}
	if err := d.effFigures(ctx, runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// effFigures reads the runs' resources and GPU memory peaks, a bounded batch
// at a time.
func (d *Ledger) effFigures(ctx context.Context, runs []effRun) error {
	v, err := d.st.Version(ctx)
	if err != nil {
		return d.wrap(err)
	}
	for from := 0; from < len(runs); from += store.MaxResourceRows {
		part := runs[from:min(len(runs), from+store.MaxResourceRows)]
		ids := make([]int64, len(part))
		for i := range part {
			ids[i] = part[i].j.Row
		}
		mem, err := d.st.JobGPUMemPeaks(ctx, ids)
		if err != nil {
			return d.wrap(err)
		}
		us := map[int64]store.Resources{}
		if v >= store.ResourcesSchema {
			if us, err = d.st.Resources(ctx, ids); err != nil {
				return d.wrap(err)
			}
		}
		for i := range part {
			r := &part[i]
			if u, ok := us[r.j.Row]; ok {
				r.u, r.e = &u, u.Efficiency()
			}
			if m, ok := mem[r.j.Row]; ok {
				m *= 100
				r.gpuMem = &m
			}
		}
	}
	return nil
}

// sortRuns orders runs by --sort; a run without the figure goes last,
// ties newest first.
func sortRuns(runs []effRun, by string, now time.Time) {
	key := func(r *effRun) (float64, bool) {
		switch by {
		case "elapsed":
			return -float64(r.j.Elapsed(now)), true
		case "time":
			return r.e.Time.Value, r.e.Time.Known
		case "cpu":
			return r.e.CPU.Value, r.e.CPU.Known
		case "mem":
			return r.e.Memory.Value, r.e.Memory.Known
		case "gpu":
			return r.j.UsedS / float64(r.j.AllocS), r.j.SampleS > 0 && r.j.AllocS > 0
		case "idle":
			return -r.j.IdleS / r.j.SampleS, r.j.SampleS > 0
		}
		return 0, true
	}
	sort.SliceStable(runs, func(a, b int) bool {
		ka, oka := key(&runs[a])
		kb, okb := key(&runs[b])
		if oka != okb {
			return oka
		}
		return oka && ka < kb
	})
}

func effTable(several bool, tr *i18n.Printer) *table.Table {
	t := &table.Table{Columns: []table.Column{
		{Key: "job", Title: tr.T("JOBID"), Kind: table.Text},
		{Key: "user", Title: tr.T("USER"), Kind: table.Text},
		{Key: "state", Title: tr.T("STATE"), Kind: table.Text, Drop: 3},
		{Key: "elapsed_s", Title: tr.T("ELAPSED"), Kind: table.Elapsed},
		{Key: "time_eff_pct", Title: tr.Text("TIME%"), Kind: table.Percent},
		{Key: "cpu_eff_pct", Title: tr.Text("CPU%"), Kind: table.Percent},
		{Key: "mem_eff_pct", Title: tr.Text("MEM%"), Kind: table.Percent},
		{Key: "gpu_eff_pct", Title: tr.Text("GPU%"), Kind: table.Percent},
		{Key: "gpu_mem_pct", Title: tr.Text("GPUMEM%"), Kind: table.Percent, Drop: 2},
		{Key: "idle_pct", Title: tr.Text("IDLE%"), Kind: table.Percent, Drop: 1},
	}}
	if several {
		t.Columns = append([]table.Column{{Key: "cluster", Title: tr.T("CLUSTER"), Kind: table.Text}}, t.Columns...)
	}
	return t
}

// pctCell is a / b as a percent cell when known, nil (not recorded)
// otherwise.
func pctCell(ok bool, a, b float64) any {
	if !ok || b <= 0 {
		return nil
	}
	return 100 * a / b
}

// share is a known ratio as a percent cell, nil otherwise.
func share(r store.Ratio) any {
	if !r.Known {
		return nil
	}
	return 100 * r.Value
}

func effRow(r *effRun, now time.Time, several bool) table.Row {
	j := &r.j
	state := j.State
	if j.EndEstimated {
		state += "*"
	}
	var gpu, idle, mem any
	if j.SampleS > 0 && j.AllocS > 0 {
		gpu = 100 * j.UsedS / float64(j.AllocS)
	}
	if j.SampleS > 0 {
		idle = 100 * j.IdleS / j.SampleS
	}
	if r.gpuMem != nil {
		mem = *r.gpuMem
	}
	cells := []any{j.ID(), j.User, strings.ToUpper(state), j.Elapsed(now), share(r.e.Time), share(r.e.CPU), share(r.e.Memory), gpu, mem, idle}
	if several {
		cells = append([]any{j.Cluster}, cells...)
	}
	return table.Row{Cells: cells}
}

// effTotals are the selection's figures summed the way each share is
// counted, so that the TOTAL is the share of the sums, not a mean of
// shares.
type effTotals struct {
	seffSums
	elapsed                    int64
	rss, reqMem                float64
	used, alloc, idle, sampled float64
	gpuMemPeak                 *float64
	memKnw                     bool
}

// seffSums are the CPU and time-limit figures of runs summed the way
// seff counts each share, over the runs whose share is known: the jobs
// table's TOTAL and the efficiency report's groups both sum them.
type seffSums struct {
	coreS, cpuS          float64 // AllocCPUS × Elapsed, TotalCPU
	elapsedLimited, limS float64 // Elapsed, time limit
	cpuKnown, timeKnown  bool
}

// addRun adds r's CPU and time figures where its shares are known.
func (s *seffSums) addRun(r *effRun) {
	u := r.u
	if u == nil {
		return
	}
	el := u.Elapsed.Seconds()
	if r.e.CPU.Known {
		s.coreS, s.cpuS, s.cpuKnown = s.coreS+float64(u.AllocCPUs)*el, s.cpuS+float64(u.TotalCPU.Value)/1000, true
	}
	if r.e.Time.Known {
		s.elapsedLimited, s.limS, s.timeKnown = s.elapsedLimited+el, s.limS+float64(u.TimeLimit.Value), true
	}
}

func (t *effTotals) add(r *effRun, now time.Time) {
	j := &r.j
	t.elapsed += j.Elapsed(now)
	t.addRun(r)
	if u := r.u; u != nil && r.e.Memory.Known {
		t.rss, t.reqMem, t.memKnw = t.rss+float64(u.MaxRSS.Value), t.reqMem+float64(u.ReqMem.Value), true
	}
	if j.SampleS > 0 {
		t.used, t.alloc, t.idle, t.sampled = t.used+j.UsedS, t.alloc+float64(j.AllocS), t.idle+j.IdleS, t.sampled+j.SampleS
	}
	if r.gpuMem != nil && (t.gpuMemPeak == nil || *r.gpuMem > *t.gpuMemPeak) {
		m := *r.gpuMem
		t.gpuMemPeak = &m
	}
}

// row is the TOTAL line: the terminal table's only (a footer).
func (t *effTotals) row(n int, several bool, tr *i18n.Printer) table.Row {
	ratio := pctCell
	var mem any
	if t.gpuMemPeak != nil {
		mem = *t.gpuMemPeak
	}
	cells := []any{tr.T("TOTAL"), tr.T("%d runs", n), "", t.elapsed, ratio(t.timeKnown, t.elapsedLimited, t.limS), ratio(t.cpuKnown, t.cpuS, t.coreS),
		ratio(t.memKnw, t.rss, t.reqMem), ratio(t.alloc > 0, t.used, t.alloc), mem, ratio(t.sampled > 0, t.idle, t.sampled)}
	if several {
		cells = append([]any{""}, cells...)
	}
	return table.Row{Cells: cells, Footer: true}
}
