package report

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// JobsQuery selects jobs for `report jobs`: store.JobsQuery with what a
// report adds.
type JobsQuery struct {
	Window  timespec.Window
	Filter  Filter
	Teams   []string
	Mapping *teams.Mapping
	Limit   int
	// Sort is start (newest first), alloc (most first), eff (lowest
	// first) or idle (most first).
	Sort string
	Now  time.Time
	// Ignored lists ignored jobs instead of counted ones.
	Ignored bool
	// Scope is the clusters read, as Request's.
	Scope Scope
	// NodeIDs are Filter.Nodes already resolved to ids (the dashboard
	// resolves them itself); Filter.Nodes, when set, wins.
	NodeIDs []int64
	// StartFrom, when not 0, is a lower bound on the start, so that the
	// start index is read only over the window plus the longest run.
	StartFrom int64
}

// JobRow is one job run as reports list it: the store's row itself, so
// that the run is one type from the ledger to the pages; what a report
// computes from it (its team, its cells) is computed where it is shown.
type JobRow = store.JobRow

// Jobs calls fn for the jobs that overlap the window, newest first (or
// in q.Sort order), until fn returns false.
func (d *Ledger) Jobs(ctx context.Context, q JobsQuery, fn func(*JobRow) bool) error {
	return d.jobs(ctx, q, nil, fn)
}

// storeQuery is q as the store selects runs, its nodes as q.NodeIDs.
func (q *JobsQuery) storeQuery() store.JobsQuery {
	return store.JobsQuery{From: q.Window.Start.Unix(), To: q.Window.End.Unix(), Ignored: q.Ignored, Clusters: q.Filter.Clusters,
		Users: q.Filter.Users, Accounts: q.Filter.Accounts, Partitions: q.Filter.Partitions, Models: q.Filter.Models, Sort: q.Sort,
		NodeIDs: q.NodeIDs, StartFrom: q.StartFrom}
}

// jobs is Jobs with the hierarchy already read for q.Teams (nil: read it
// here when q.Teams needs it).
func (d *Ledger) jobs(ctx context.Context, q JobsQuery, h *Hierarchy, fn func(*JobRow) bool) error {
	sq := q.storeQuery()
	if len(q.Filter.Nodes) > 0 {
		ids, err := d.nodeIDs(q.Filter.Nodes, q.Filter.Clusters)
		if err != nil {
			return err
		}
		sq.NodeIDs = ids
	}
	if _, ok := sortName[q.Sort]; !ok {
		return fmt.Errorf("--sort %q is not start, alloc, eff or idle", q.Sort)
	}
	m := q.Mapping
	if m == nil {
		m = &teams.Mapping{}
	}
	want := map[string]bool{}
	for _, t := range q.Teams {
		want[t] = true
	}
	// --teams names a team or an organisation above it, as in report.
	if h == nil && len(want) > 0 {
		var err error
		if h, err = d.Hierarchy(ctx, m); err != nil {
			return err
		}
	}
	err := d.st.Jobs(ctx, sq, func(r *store.JobRow) bool {
		if len(want) > 0 && !h.Under(r.Cluster, m.Team(r.Account, r.User), want) {
			return true
		}
		// The store reuses r; fn may keep what it is given.
		j := *r
		return fn(&j)
	})
	return d.wrap(err)
}

// JobList is `report jobs`: the jobs that overlap the window with their
// whole-run figures (not clipped to the window).
func (d *Ledger) JobList(ctx context.Context, q JobsQuery) (*table.Table, error) {
	m := q.Mapping
	if m == nil {
		m = &teams.Mapping{}
	}
	var h *Hierarchy
	if len(q.Teams) > 0 {
		var err error
		if h, err = d.Hierarchy(ctx, m); err != nil {
			return nil, err
		}
	}
	if err := d.checkTeams(ctx, m, h, q.Teams); err != nil {
		return nil, err
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return nil, badInput("--limit %d is not from 1 to %d", q.Limit, MaxLimit)
	}
	if q.Limit == 0 {
		q.Limit = 50
	}
	t := &table.Table{Columns: []table.Column{
		{Key: "job", Title: "JOBID", Kind: table.Text},
		{Key: "user", Title: "USER", Kind: table.Text},
		{Key: "team", Title: "TEAM", Kind: table.Text, Drop: 7},
		{Key: "partition", Title: "PARTITION", Kind: table.Text, Drop: 9},
		{Key: "nodes", Title: "NODES", Kind: table.Text, Drop: 8},
		{Key: "gpus", Title: "GPUS", Kind: table.Int},
		{Key: "start", Title: "START", Kind: table.Time, Drop: 6},
		{Key: "elapsed_s", Title: "ELAPSED", Kind: table.Elapsed},
		{Key: "state", Title: "STATE", Kind: table.Text, Drop: 5},
		{Key: "alloc_gpu", Title: "ALLOC", Kind: table.GPUSeconds},
		{Key: "used_gpu", Title: "USED", Kind: table.GPUSeconds, Drop: 3},
		{Key: "efficiency_pct", Title: "EFF%", Kind: table.Percent, Drop: 1},
		{Key: "idle_gpu", Title: "IDLE", Kind: table.GPUSeconds, Drop: 2},
		{Key: "energy_kwh", Title: "kWh", Kind: table.KWh, Drop: 4},
	}}
	if q.Scope.Several() {
		t.Columns = append([]table.Column{{Key: "cluster", Title: "CLUSTER", Kind: table.Text}}, t.Columns...)
	}
	var runs []int64 // for the MIG column (migadvice.go)
	err := d.jobs(ctx, q, h, func(j *JobRow) bool {
		runs = append(runs, j.Row)
		state := j.State
		if j.EndEstimated {
			state += "*"
		}
		cells := usageCells(j.Usage, 0)
		row := []any{j.ID(), j.User, m.Team(j.Account, j.User), j.Partition, j.Nodes, j.GPUs, j.Start,
			j.Elapsed(q.Now), state, j.AllocS, cells[1], cells[2], cells[3], cells[4]}
		if q.Scope.Several() {
			row = append([]any{j.Cluster}, row...)
		}
		t.Rows = append(t.Rows, table.Row{Cells: row, Ref: float64(j.AllocS)})
		return len(t.Rows) < q.Limit
	})
	if err != nil {
		return nil, err
	}
	if err := d.addSliceColumn(ctx, t, runs); err != nil {
		return nil, err
	}
	on := q.Scope.on()
	t.Title = fmt.Sprintf("Jobs%s running between %s and %s (%s), %s, at most %d", on, q.Window.Start.Format("2006-01-02 15:04"),
		q.Window.End.Format("2006-01-02 15:04"), zoneName(q.Window.Start.Location(), q.Window.Start), sortName[q.Sort], q.Limit)
	t.Meta = windowMeta("jobs", q.Window, q.Scope)
	t.Notes = []string{"figures are whole runs; * = end estimated (epilog record missing); details: gpuacct job JOBID"}
	return t, nil
}

var sortName = map[string]string{"": "newest first", "start": "newest first", "alloc": "most GPU-hours first", "eff": "least efficient first", "idle": "most idle first"}

// AllTime is a window holding every job.
func AllTime(now time.Time) timespec.Window {
	return timespec.Window{Start: time.Unix(0, 0), End: now.Add(100 * 365 * 24 * time.Hour)}
}
