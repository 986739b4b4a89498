package report

import (
	"context"
	"fmt"
	"sort"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// EffGroups are the groups `report efficiency --by` sums runs in.
var EffGroups = []string{"users", "teams", "accounts"}

// effSums are one group's CPU, memory and time figures: each pair summed
// over the runs whose both figures are known, so that a site without a
// gather plugin adds nothing rather than zeros.
type effSums struct {
	seffSums
	runs                int64
	reqMemGiBS, rssGiBS float64
	memKnown            bool
}

func (s *effSums) add(r *effRun) {
	s.runs++
	s.addRun(r)
	u := r.u
	if u == nil {
		return
	}
	if r.e.Memory.Known {
		el := u.Elapsed.Seconds()
		// Per node, as asked for and as seff counts the peak: the nodes
		// multiply both.
		const gib = 1 << 30
		nodes := float64(max(u.Nodes, 1))
		s.reqMemGiBS += float64(u.ReqMem.Value) / gib * nodes * el
		s.rssGiBS += float64(u.MaxRSS.Value) / gib * nodes * el
		s.memKnown = true
	}
}

func (s *effSums) cells() []any {
	hours := func(ok bool, v float64) any {
		if !ok {
			return nil
		}
		return v / 3600
	}
	ratio := pctCell
	return []any{s.runs, hours(s.cpuKnown, s.coreS), hours(s.cpuKnown, s.cpuS), ratio(s.cpuKnown, s.cpuS, s.coreS),
		hours(s.memKnown, s.reqMemGiBS), hours(s.memKnown, s.rssGiBS), ratio(s.memKnown, s.rssGiBS, s.reqMemGiBS),
		ratio(s.timeKnown, s.elapsedLimited, s.limS)}
}

// EfficiencyReport is `report efficiency`: per user, team or account, the
// CPU-hours allocated and used, the memory asked for and used (GiB-hours)
// and how much of their time limits the runs needed, over the runs in
// q's window, most allocated CPU-hours first, then a TOTAL; so a team
// lead sees over-asking, not only idle GPUs.
func (d *Ledger) EfficiencyReport(ctx context.Context, q EffQuery, by string, m *teams.Mapping) (*table.Table, error) {
	key := map[string]func(j *JobRow) string{
		"users":    func(j *JobRow) string { return j.User },
		"accounts": func(j *JobRow) string { return j.Account },
		"teams":    func(j *JobRow) string { return m.Team(j.Account, j.User) },
	}[by]
	if key == nil {
		return nil, badInput("--by %q is not users, teams or accounts", by)
	}
	if len(q.Teams) > 0 {
		h, err := d.Hierarchy(ctx, m)
		if err != nil {
			return nil, err
		}
		if err := d.checkTeams(ctx, m, h, q.Teams); err != nil {
			return nil, err
		}
	}
	q.Mapping = m
	runs, err := d.effRuns(ctx, q)
	if err != nil {
		return nil, err
	}
	groups := map[string]*effSums{}
	var total effSums
	for i := range runs {
		k := key(&runs[i].j)
		if groups[k] == nil {
			groups[k] = &effSums{}
		}
		groups[k].add(&runs[i])
		total.add(&runs[i])
	}
	names := make([]string, 0, len(groups))
	for k := range groups {
		names = append(names, k)
	}
	sort.Slice(names, func(a, b int) bool {
		ga, gb := groups[names[a]], groups[names[b]]
		if ga.coreS != gb.coreS {
			return ga.coreS > gb.coreS
		}
		return names[a] < names[b]
	})
	title := map[string]string{"users": "USER", "teams": "TEAM", "accounts": "ACCOUNT"}[by]
	t := &table.Table{Columns: []table.Column{
		{Key: by[:len(by)-1], Title: title, Kind: table.Text},
		{Key: "runs", Title: "RUNS", Kind: table.Int},
		{Key: "cpu_alloc_hours", Title: "CPU-H ALLOC", Kind: table.ResourceHours},
		{Key: "cpu_used_hours", Title: "CPU-H USED", Kind: table.ResourceHours},
		{Key: "cpu_eff_pct", Title: "CPU%", Kind: table.Percent},
		{Key: "mem_req_gib_hours", Title: "MEM GiB-H ASKED", Kind: table.ResourceHours, Drop: 2},
		{Key: "mem_peak_gib_hours", Title: "MEM GiB-H PEAK", Kind: table.ResourceHours, Drop: 2},
		{Key: "mem_eff_pct", Title: "MEM%", Kind: table.Percent},
		{Key: "time_limit_used_pct", Title: "TIME%", Kind: table.Percent, Drop: 1},
	}}
	for _, k := range names {
		t.Rows = append(t.Rows, table.Row{Cells: append([]any{k}, groups[k].cells()...)})
	}
	if len(runs) > 0 {
		t.Rows = append(t.Rows, table.Row{Cells: append([]any{"TOTAL"}, total.cells()...), Footer: true})
	}
	t.Title = fmt.Sprintf("CPU, memory and time limits per %s%s, runs between %s and %s (%s)", by[:len(by)-1], q.Scope.on(),
		q.Window.Start.Format("2006-01-02 15:04"), q.Window.End.Format("2006-01-02 15:04"), zoneName(q.Window.Start.Location(), q.Window.Start))
	t.Meta = windowMeta("efficiency", q.Window, q.Scope, table.KV{Key: "by", Value: by}, table.KV{Key: "runs", Value: int64(len(runs))})
	t.Notes = []string{"whole runs, from sacct; memory used is each run's peak (MaxRSS) held over its run, as seff counts it",
		"- = not recorded (JobAcctGatherType is none) or no run with a limit or --mem; TIME% = elapsed of the time limits asked for"}
	return t, nil
}
