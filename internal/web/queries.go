package web

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// The dashboard's reads beyond the report tables, through report.Ledger's
// own reads for the dashboard (conn.rep).

// nodeInfo is one node as the overview shows it: the read model's node
// and what the page computes from it.
type nodeInfo struct {
	report.NodeOverview
	AgeS  *int64 `json:"age_s"`
	Stale bool   `json:"stale"`
	// Forgotten nodes were silent longer than report.check_forget.
	Forgotten bool `json:"decommissioned"`
}

func (c *conn) nodes(ctx context.Context, now time.Time, o Options) ([]nodeInfo, error) {
	rows, err := c.rep.NodesOverview(ctx)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	out := make([]nodeInfo, 0, len(rows))
	for _, r := range rows {
		n := nodeInfo{NodeOverview: r}
		if r.LastSeen != nil {
			age := now.Unix() - *r.LastSeen
			n.AgeS = &age
			d := time.Duration(age) * time.Second
			n.Stale = d > o.Check.Stale
			n.Forgotten = o.Check.Forget > 0 && d > o.Check.Forget
		}
		out = append(out, n)
	}
	return out, nil
}

// lastPass is the newest ingest pass.
type lastPass struct {
	Finished *int64
	OK       bool
	LastOK   *int64
}

func (c *conn) lastPass(ctx context.Context) (lastPass, error) {
	var p lastPass
	last, found, err := c.rep.LastPass(ctx)
	if err != nil {
		return p, fmt.Errorf("read passes: %w", err)
	}
	if found {
		p.Finished, p.OK = last.Finished, last.OK
	}
	if p.LastOK, err = c.rep.LastGoodPass(ctx); err != nil {
		return p, fmt.Errorf("read passes: %w", err)
	}
	return p, nil
}

// runningJob is a job without an end.
type runningJob struct {
	report.JobRow
	GPUList []report.RunningGPU
}

// running lists at most limit jobs of clusters (none: every cluster)
// that have started and not ended, newest first, with their GPUs and each
// GPU's newest utilization.
func (c *conn) running(ctx context.Context, clusters []string, limit int) ([]runningJob, error) {
	rows, err := c.rep.RunningJobs(ctx, clusters, limit)
	if err != nil {
		return nil, fmt.Errorf("read running jobs: %w", err)
	}
	out := make([]runningJob, 0, len(rows))
	byRow := make(map[int64]int, len(rows))
	ids := make([]int64, 0, len(rows))
	for i := range rows {
		byRow[rows[i].Row] = len(out)
		ids = append(ids, rows[i].Row)
		out = append(out, runningJob{JobRow: rows[i]})
	}
	if len(out) == 0 {
		return out, nil
	}
	gpus, err := c.rep.RunningGPUs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read running jobs' GPUs: %w", err)
	}
	for _, g := range gpus {
		i := byRow[g.Row]
		out[i].GPUList = append(out[i].GPUList, g)
	}
	for i := range out {
		gs := out[i].GPUList
		sort.Slice(gs, func(a, b int) bool {
			if gs[a].Node != gs[b].Node {
				return gs[a].Node < gs[b].Node
			}
			return idxOf(gs[a].Index) < idxOf(gs[b].Index)
		})
	}
	return out, nil
}

func idxOf(p *int64) int64 {
	if p == nil {
		return 1 << 40
	}
	return *p
}

// usageRow is one row of a report table, with the cells the pages use.
type usageRow struct {
	Period, Name, Teams string
	Cluster             string // "" unless the report read several clusters
	AllocS              int64
	UsedS, IdleS        *float64
	Eff, Share, KWh     *float64
	Jobs                int64
	// Billing is billing-unit-seconds; nil where the ledger billed
	// nothing (the report has no billing column), and no column shows.
	Billing *float64
}

// reportRows reads the report req asks for as rows (rowsOf) and sets
// total to their sum.
func (c *conn) reportRows(ctx context.Context, req report.Request, total *usageRow) ([]usageRow, error) {
	t, err := c.rep.Report(ctx, req)
	if err != nil {
		return nil, err
	}
	rows := rowsOf(t)
	*total = sum(rows)
	return rows, nil
}

// rowsOf reads a report table by column key (internal/report's
// usageColumns), leaving out its footers (the pages sum rows
// themselves).
func rowsOf(t *table.Table) []usageRow {
	col := map[string]int{}
	for i, c := range t.Columns {
		col[c.Key] = i
	}
	str := func(cells []any, k string) string {
		if i, ok := col[k]; ok {
			if s, ok := cells[i].(string); ok {
				return s
			}
		}
		return ""
	}
	fl := func(cells []any, k string) *float64 {
		i, ok := col[k]
		if !ok || cells[i] == nil {
			return nil
		}
		var v float64
		switch x := cells[i].(type) {
		case float64:
			v = x
		case int64:
			v = float64(x)
		default:
			return nil
		}
		return &v
	}
	in := func(cells []any, k string) int64 {
		if p := fl(cells, k); p != nil {
			return int64(*p)
		}
		return 0
	}
	name := ""
	for _, k := range []string{"team", "user", "account", "partition", "node", "model"} {
		if _, ok := col[k]; ok {
			name = k
			break
		}
	}
	out := make([]usageRow, 0, len(t.Rows))
	for _, r := range t.Rows {
		if r.Footer {
			continue
		}
		c := r.Cells
		out = append(out, usageRow{Period: str(c, "period"), Cluster: str(c, "cluster"), Name: str(c, name), Teams: str(c, "teams"), AllocS: in(c, "alloc_gpu"),
			UsedS: fl(c, "used_gpu"), IdleS: fl(c, "idle_gpu"), Eff: fl(c, "efficiency_pct"), Share: fl(c, "share_pct"),
			KWh: fl(c, "energy_kwh"), Jobs: in(c, "jobs"), Billing: fl(c, "billing")})
	}
	return out
}

// sum adds rows into one total; used and idle are missing when no row
// had samples.
func sum(rows []usageRow) usageRow {
	var t usageRow
	var used, idle, kwh, bill float64
	var haveUsed, haveKWh, haveBill bool
	for _, r := range rows {
		if r.Billing != nil {
			bill += *r.Billing
			haveBill = true
		}
		t.AllocS += r.AllocS
		t.Jobs += r.Jobs
		if r.UsedS != nil {
			used += *r.UsedS
			haveUsed = true
		}
		if r.IdleS != nil {
			idle += *r.IdleS
		}
		if r.KWh != nil {
			kwh += *r.KWh
			haveKWh = true
		}
	}
	if haveUsed {
		t.UsedS, t.IdleS = &used, &idle
		if t.AllocS > 0 {
			e := 100 * used / float64(t.AllocS)
			t.Eff = &e
		}
	}
	if haveKWh {
		t.KWh = &kwh
	}
	if haveBill {
		t.Billing = &bill
	}
	return t
}

// jobsIn calls fn for each job of q in q.Sort order until fn returns
// false. q.StartFrom (earliestStart) keeps the scan on the start index.
func (c *conn) jobsIn(ctx context.Context, q report.JobsQuery, fn func(*report.JobRow) bool) error {
	err := c.rep.ScanJobs(ctx, q, fn)
	if err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	return nil
}

// earliestStart is the earliest start a job overlapping a window that
// begins at from can have: from minus the longest ended job (with slack
// for the age of that figure), or the start of the oldest open job.
func (s *source) earliestStart(ctx context.Context, c *conn, from int64) (int64, error) {
	now := time.Now()
	s.mu.Lock()
	longest, at := s.longest, s.longestAt
	s.mu.Unlock()
	if at.IsZero() || now.Sub(at) > 10*time.Minute {
		l, err := c.rep.LongestEndedJob(ctx)
		if err != nil {
			return 0, fmt.Errorf("read jobs: %w", err)
		}
		longest, at = l, now
		s.mu.Lock()
		s.longest, s.longestAt = longest, at
		s.mu.Unlock()
	}
	// A job that ended since then is at most that much longer.
	lo := from - longest - int64(now.Sub(at).Seconds()) - 3600
	open, err := c.rep.OldestOpenStart(ctx)
	if err != nil {
		return 0, fmt.Errorf("read jobs: %w", err)
	}
	if open != nil && *open < lo {
		lo = *open
	}
	return lo, nil
}
