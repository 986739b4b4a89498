package report

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// Kinds are the sub-reports of gpuacct report, in --help order.
var Kinds = []string{"teams", "users", "accounts", "partitions", "nodes", "models", "tree", "top", "jobs"}

// Request is one aggregate report.
type Request struct {
	Kind    string
	Window  timespec.Window // whole hours (HourWindow)
	Period  timespec.Period
	Filter  Filter
	Teams   []string
	Mapping *teams.Mapping
	// TopBy is users or teams for Kind top; Limit caps top (and jobs).
	TopBy string
	Limit int
	// Level rolls teams up to their organisation at that level (1: the
	// top ones) for Kind teams, tree and top by teams; 0 leaves them.
	Level int
	// Scope is the clusters read (Filter.Clusters holds its filter):
	// over several, each cluster's rows stay apart in a cluster column;
	// the title and the JSON name them when the ledger holds several.
	// The zero Scope is one cluster.
	Scope Scope
	// TRES is what the report counts, as sreport's -T: TRESGPU ("" too)
	// or TRESBilling (billing.go).
	TRES string
	// billingColumn: a GPU report of a site with billing weights shows
	// a BILLING column (set by Report).
	billingColumn bool
}

type groupKey struct {
	bucket  int
	cluster string // "" unless Scope.Several()
	a, b    string // the row's name(s): team and user for tree
}

type group struct {
	key     groupKey
	usage   Usage
	extra   map[string]bool  // the teams of a user
	teamUse map[string]Usage // a user's usage by team, whence extra
	// gpuEq is AllocS with each MIG slice weighed by its share of its
	// GPU (migcolumn.go)
	gpuEq float64
}

// checkTeams refuses a --teams filter naming a team nobody is in, or an
// organisation of h (nil: none) that is not there.
func (d *Ledger) checkTeams(ctx context.Context, m *teams.Mapping, h *Hierarchy, want []string) error {
	if len(want) == 0 {
		return nil
	}
	known := map[string]bool{teams.Unassigned: true}
	if h != nil {
		for _, n := range h.Names() {
			known[n] = true
		}
	}
	if m.Mapped() {
		for _, n := range m.Names() {
			known[n] = true
		}
	} else {
		accts, err := d.Distinct(ctx, "account")
		if err != nil {
			return err
		}
		for a := range accts {
			known[m.Team(a, "")] = true
		}
	}
	for _, t := range want {
		if !known[t] {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			sort.Strings(names)
			return badInput("--teams: unknown team %q (teams: %s)", t, strings.Join(names, ", "))
		}
	}
	return nil
}

func (f Filter) narrows(teamsFilter []string) bool {
	return len(f.Users)+len(f.Accounts)+len(f.Partitions)+len(f.Nodes)+len(f.Models)+len(teamsFilter) > 0
}

// Report builds an aggregate report's table, every read in one snapshot.
func (d *Ledger) Report(ctx context.Context, r Request) (*table.Table, error) {
	var t *table.Table
	err := d.snapshot(ctx, func(d *Ledger) (err error) {
		t, err = d.report(ctx, r)
		return err
	})
	return t, err
}

func (d *Ledger) report(ctx context.Context, r Request) (*table.Table, error) {
	kind := r.Kind
	if kind == "top" {
		switch r.TopBy {
		case "", "users":
			kind = "users"
		case "teams":
			kind = "teams"
		default:
			return nil, fmt.Errorf("--by %q is not users or teams", r.TopBy)
		}
		if r.Limit <= 0 {
			r.Limit = 10
		}
	}
	if err := timespec.CheckBuckets(r.Window, r.Period); err != nil {
		return nil, &BadInput{Err: err}
	}
	if r.Limit < 0 || r.Limit > MaxLimit {
		return nil, badInput("--limit %d is not from 1 to %d", r.Limit, MaxLimit)
	}
	if err := checkLevel(kind, r.Level); err != nil {
		return nil, err
	}
	var err error
	if r.TRES, r.billingColumn, err = d.billingOf(ctx, r); err != nil {
		return nil, err
	}
	bs := timespec.Buckets(r.Window, r.Period)
	m := r.Mapping
	if m == nil {
		m = &teams.Mapping{}
	}
	// The organisations are read only where they matter: a tree, a
	// roll-up, or a --teams that may name an organisation.
	h := FlatHierarchy(m)
	if kind == "tree" || r.Level > 0 || len(r.Teams) > 0 {
		var err error
		if h, err = d.Hierarchy(ctx, m); err != nil {
			return nil, err
		}
	}
	if err := d.checkTeams(ctx, m, h, r.Teams); err != nil {
		return nil, err
	}
	wantTeam := map[string]bool{}
	for _, t := range r.Teams {
		wantTeam[t] = true
	}
	// wanted: --teams names a team or an organisation above it.
	wanted := func(cluster, team string) bool {
		return len(wantTeam) == 0 || h.Under(cluster, team, wantTeam)
	}
	groups := map[groupKey]*group{}
	totals := make([]Usage, len(bs))
	// perCluster is each bucket's allocated GPU-time per cluster: the
	// share of a row is of its own cluster.
	perCluster := map[groupKey]int64{}
	addTotal := func(i int, x *Fact) {
		totals[i].AllocS += x.AllocS
		if r.Scope.Several() {
			perCluster[groupKey{bucket: i, cluster: x.Cluster}] += x.AllocS
		}
	}
	// sole is the cluster of the facts when their rows do not keep it
	// (one cluster read): a tree is placed in that cluster's accounts.
	sole := ""
	narrow := r.Filter.narrows(r.Teams)
	needNode := kind == "nodes"
	if !d.keepAll {
		r.Filter.keep = keepOf(r, kind, m)
	}
	overflow, overRows := false, false
	sliced := false // a fact of a MIG slice: the GPU-EQ column is shown
	fp, err := d.planFacts(ctx, bs, r.Filter, needNode)
	if err != nil {
		return nil, err
	}
	floor, err := d.rowFloorFor(ctx, r, kind, bs, fp, m)
	if err != nil {
		return nil, err
	}
	// A refusal certain before the last row stops the read there: it
	// is the answer, and as fast as the rows it took to know it.
	readCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	err = d.readFacts(readCtx, fp, func(x *Fact) {
		if r.TRES == TRESBilling {
			x.Usage = billingView(x.Usage)
		}
		i := timespec.Find(bs, x.Start)
		if i < 0 || x.Usage == (Usage{}) {
			return
		}
		if floor != nil && negative(x.Usage) {
			floor = nil
		}
		team := m.Team(x.Account, x.User)
		if !narrow {
			addTotal(i, x)
		}
		if !wanted(x.Cluster, team) {
			return
		}
		if sole == "" {
			sole = x.Cluster
		}
		if kind == "teams" {
			team = h.At(x.Cluster, team, r.Level)
		}
		k := groupKey{bucket: i}
		if r.Scope.Several() {
			k.cluster = x.Cluster
		}
		switch kind {
		case "users":
			k.a = x.User
		case "teams":
			k.a = team
		case "accounts":
			k.a = x.Account
		case "partitions":
			k.a = x.Partition
		case "nodes":
			k.a = x.Node
		case "models":
			k.a = x.Model
		case "tree":
			k.a, k.b = team, x.User
		default:
			return
		}
		g := groups[k]
		if g == nil {
			if len(groups) >= groupCap {
				overflow = true
				stop(errRefused)
				return
			}
			g = &group{key: k}
			groups[k] = g
		}
		before := g.usage
		g.usage.Add(x.Usage)
		if floor != nil && floor.grew(i, before, g.usage) {
			overRows = true
			stop(errRefused)
			return
		}
		g.gpuEq += gpuEqSeconds(x, &sliced)
		if kind == "users" {
			if g.teamUse == nil {
				g.teamUse = map[string]Usage{}
			}
			u := g.teamUse[team]
			u.Add(x.Usage)
			g.teamUse[team] = u
		}
	})
	switch {
	case overflow:
		return nil, tooBig("sums (periods × rows)", groupCap)
	case overRows:
		return nil, tooBig("rows", rowCap)
	case err != nil:
		return nil, err
	}
	// What a span subtracted may leave a group, or a user's team, empty:
	// it is not there, as it is not when read day by day.
	for k, g := range groups {
		var left bool
		if g.usage, left = settled(g.usage); !left {
			delete(groups, k)
			continue
		}
		for team, u := range g.teamUse {
			if _, left := settled(u); left {
				if g.extra == nil {
					g.extra = map[string]bool{}
				}
				g.extra[team] = true
			}
		}
	}
	if narrow {
		// Shares are of the whole cluster, not of the filtered part.
		all := Filter{Clusters: r.Filter.Clusters}
		if !d.keepAll {
			all.keep = store.ColCluster
		}
		err := d.Facts(ctx, bs, all, false, func(x *Fact) {
			if r.TRES == TRESBilling {
				x.Usage = billingView(x.Usage)
			}
			if i := timespec.Find(bs, x.Start); i >= 0 {
				addTotal(i, x)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	eq := sliced && r.TRES != TRESBilling && kind != "tree"
	t := buildTable(r, kind, h.in(sole), bs, groups, totals, perCluster, eq)
	if len(t.Rows) > rowCap {
		return nil, tooBig("rows", rowCap)
	}
	return t, nil
}

// keepOf is the columns of a fact report r reads (Filter.keep): its
// rows' names, the team (the account, the user too under a mapping) for
// teams, a tree, the users' TEAMS column or --teams, and the model for
// GPU-EQ (gpuEqSeconds), which a tree and a billing report do not show.
// The filters select in the query and need no column.
func keepOf(r Request, kind string, m *teams.Mapping) store.Cols {
	k := store.ColCluster
	team := func() {
		k |= store.ColAccount
		if m.Mapped() {
			k |= store.ColUser
		}
	}
	switch kind {
	case "users":
		k |= store.ColUser
		team()
	case "teams":
		team()
	case "accounts":
		k |= store.ColAccount
	case "partitions":
		k |= store.ColPartition
	case "models":
		k |= store.ColModel
	case "tree":
		k |= store.ColUser
		team()
	case "nodes":
	default:
		return store.AllCols
	}
	if len(r.Teams) > 0 {
		team()
	}
	if r.TRES != TRESBilling && kind != "tree" {
		k |= store.ColModel
	}
	if k&store.ColUser != 0 {
		// A row a user is near the rollups' own rows: summing a partition
		// or model away saves few rows and costs the database a sort of
		// the whole range before its first row, which a refusal would
		// otherwise stop early (the rows stream in the key's order).
		return store.AllCols
	}
	return k
}

// rowFloorFor is r's rowFloor, or nil where a refusal for rows cannot be
// known before the end: a plan that subtracts, a tree, a roll-up or
// several clusters (not bounded here), rows that cannot pass rowCap, or
// sums that might still pass groupCap, a refusal for sums which comes
// first as it always did. The buckets × the values a report groups by
// (nodes known, teams mapped, or the rollups' distinct values) bound
// the sums.
func (d *Ledger) rowFloorFor(ctx context.Context, r Request, kind string, bs []timespec.Bucket, fp factPlan, m *teams.Mapping) (*rowFloor, error) {
	if kind == "tree" || r.Level > 0 || r.Scope.Several() || len(bs) < 2 || !fp.adds() {
		return nil, nil
	}
	f := newRowFloor(len(bs), r.Limit, r.Period != timespec.None)
	if len(bs)*f.rows(groupCap) <= rowCap {
		return nil, nil
	}
	k, col := 0, ""
	switch kind {
	case "nodes":
		names := map[string]bool{"": true} // a node newer than d's names
		for _, n := range d.nodeNames {
			names[n] = true
		}
		k = len(names)
	case "teams":
		if m.Mapped() {
			k = len(m.Names())
			break
		}
		col, k = "account", 1 // and Unassigned
	case "users":
		col = "user"
	case "accounts":
		col = "account"
	case "partitions":
		col = "partition"
	case "models":
		col = "model"
	default:
		return nil, nil
	}
	if col != "" {
		vals, err := d.Distinct(ctx, col)
		if err != nil {
			return nil, err
		}
		k += len(vals)
	}
	if len(bs)*k > groupCap || len(bs)*f.rows(k) <= rowCap {
		return nil, nil
	}
	return f, nil
}

func usageColumns() []table.Column {
	return []table.Column{
		{Key: "alloc_gpu", Title: "ALLOC", Kind: table.GPUSeconds},
		{Key: "used_gpu", Title: "USED", Kind: table.GPUSeconds, Drop: 3},
		{Key: "efficiency_pct", Title: "EFF%", Kind: table.Percent, Drop: 2},
		{Key: "idle_gpu", Title: "IDLE", Kind: table.GPUSeconds, Drop: 4},
		{Key: "energy_kwh", Title: "kWh", Kind: table.KWh, Drop: 6},
		{Key: "jobs", Title: "JOBS", Kind: table.Int, Drop: 5},
		{Key: "share_pct", Title: "SHARE%", Kind: table.Percent, Drop: 1},
	}
}

// usageCells are the cells of usageColumns. Used, idle and efficiency are
// missing (not 0) when no sample covered the row.
func usageCells(u Usage, clusterAlloc int64) []any {
	var used, idle, eff, share any
	if u.SampleS > 0 {
		used, idle = u.UsedS, u.IdleS
		if u.AllocS > 0 {
			eff = 100 * u.UsedS / float64(u.AllocS)
		}
	}
	if clusterAlloc > 0 {
		share = 100 * float64(u.AllocS) / float64(clusterAlloc)
	}
	var energy any
	if u.EnergyMJ > 0 || u.SampleS > 0 {
		energy = float64(u.EnergyMJ) / 3.6e9
	}
	return []any{u.AllocS, used, eff, idle, energy, u.Jobs, share}
}

var kindTitle = map[string]string{
	"users": "user", "teams": "team", "accounts": "account", "partitions": "partition",
	"nodes": "node", "models": "GPU model", "tree": "team and user",
}

func buildTable(r Request, kind string, h *Hierarchy, bs []timespec.Bucket, groups map[groupKey]*group, totals []Usage, perCluster map[groupKey]int64, eq bool) *table.Table {
	t := &table.Table{}
	loc := r.Window.Start.Location()
	if r.Period != timespec.None {
		t.Columns = append(t.Columns, table.Column{Key: "period", Title: "PERIOD", Kind: table.Text})
	}
	if r.Scope.Several() {
		t.Columns = append(t.Columns, table.Column{Key: "cluster", Title: "CLUSTER", Kind: table.Text})
	}
	name := strings.TrimSuffix(kind, "s")
	switch kind {
	case "tree":
		t.Columns = append(t.Columns, table.Column{Key: "team", Title: "TEAM", Kind: table.Text, Parent: true}, table.Column{Key: "user", Title: "USER", Kind: table.Text})
	case "users":
		t.Columns = append(t.Columns, table.Column{Key: "user", Title: "USER", Kind: table.Text}, table.Column{Key: "teams", Title: "TEAMS", Kind: table.Text, Drop: 7})
	default:
		t.Columns = append(t.Columns, table.Column{Key: name, Title: strings.ToUpper(name), Kind: table.Text})
	}
	t.Columns = append(t.Columns, columnsOf(r.TRES, r.billingColumn)...)
	cells := cellsOf(r.TRES, r.billingColumn)
	if kind == "tree" {
		t.Columns = append(t.Columns, treeColumns()...)
	}
	if eq {
		t.Columns = append(t.Columns, gpuEqColumn)
	}

	byBucket := make([][]*group, len(bs))
	for _, g := range groups {
		byBucket[g.key.bucket] = append(byBucket[g.key.bucket], g)
	}
	label := func(s string) string {
		if s == "" {
			switch kind {
			case "models":
				return "(unknown)"
			case "users", "tree":
				return "(unknown)"
			}
			return "(none)"
		}
		return s
	}
	for i, gs := range byBucket {
		byAlloc := func(a, b *group) bool {
			if a.usage.AllocS != b.usage.AllocS {
				return a.usage.AllocS > b.usage.AllocS
			}
			if a.key.a != b.key.a {
				return a.key.a < b.key.a
			}
			if a.key.b != b.key.b {
				return a.key.b < b.key.b
			}
			return a.key.cluster < b.key.cluster
		}
		if r.Period != timespec.None && kind != "tree" {
			sort.Slice(gs, func(x, y int) bool {
				if gs[x].key.a != gs[y].key.a {
					return gs[x].key.a < gs[y].key.a
				}
				return gs[x].key.cluster < gs[y].key.cluster
			})
		} else {
			sort.Slice(gs, func(x, y int) bool { return byAlloc(gs[x], gs[y]) })
		}
		if r.Limit > 0 && len(gs) > r.Limit {
			gs = gs[:r.Limit]
		}
		if r.Scope.Several() && r.Kind != "top" {
			// sreport lists cluster by cluster; top stays in rank order.
			sort.SliceStable(gs, func(x, y int) bool { return gs[x].key.cluster < gs[y].key.cluster })
		}
		// clusterAlloc is what a row's share is of: its cluster's
		// allocated GPU-time, or the scope's for a total.
		clusterAlloc := func(c string, total bool) int64 {
			if !r.Scope.Several() || total {
				return totals[i].AllocS
			}
			return perCluster[groupKey{bucket: i, cluster: c}]
		}
		prefix := func(c string, total bool) []any {
			var p []any
			if r.Period != timespec.None {
				p = append(p, bs[i].Label)
			}
			if r.Scope.Several() {
				if total {
					p = append(p, nil)
				} else {
					p = append(p, c)
				}
			}
			return p
		}
		if kind == "tree" {
			t.Rows = append(t.Rows, treeRows(h, r.Level, gs, label, prefix, clusterAlloc, cells)...)
			continue
		}
		var sum Usage
		var sumEq float64
		for _, g := range gs {
			all := clusterAlloc(g.key.cluster, false)
			row := append(prefix(g.key.cluster, false), label(g.key.a))
			if kind == "users" {
				row = append(row, strings.Join(sortedKeys(g.extra), ","))
			}
			row = append(row, cells(g.usage, all)...)
			if eq {
				row = append(row, g.gpuEq)
			}
			t.Rows = append(t.Rows, table.Row{Cells: row, Ref: float64(all)})
			sum.Add(g.usage)
			sumEq += g.gpuEq
		}
		if len(gs) > 1 || r.Period != timespec.None {
			all := clusterAlloc("", true)
			row := append(prefix("", true), "TOTAL")
			if kind == "users" {
				row = append(row, nil)
			}
			row = append(row, cells(sum, all)...)
			if eq {
				row = append(row, sumEq)
			}
			t.Rows = append(t.Rows, table.Row{Cells: row, Ref: float64(all), Footer: true})
		}
	}
	what := kindTitle[kind]
	if r.Kind == "top" {
		what = fmt.Sprintf("top %d %s", r.Limit, r.TopBy)
		if r.TopBy == "" {
			what = fmt.Sprintf("top %d users", r.Limit)
		}
	}
	per := ""
	if r.Period != timespec.None {
		per = ", per " + string(r.Period)
	}
	if r.Level > 0 {
		per += fmt.Sprintf(", teams rolled up to level %d", r.Level)
	}
	on := r.Scope.on()
	t.Title = fmt.Sprintf("GPU usage by %s%s%s, %s – %s (%s)", what, on, per,
		r.Window.Start.Format("2006-01-02 15:04"), r.Window.End.Format("2006-01-02 15:04"), zoneName(loc, r.Window.Start))
	t.Meta = windowMeta(r.Kind, r.Window, r.Scope, table.KV{Key: "period", Value: periodName(r.Period)})
	if len(t.Rows) == 0 {
		t.Notes = append(t.Notes, "(no GPU usage recorded in this window)")
	}
	if eq {
		t.Notes = append(t.Notes, gpuEqNote)
	}
	if r.Scope.Several() {
		t.Notes = append(t.Notes, "efficiency = used / allocated GPU-time; share = of all allocated GPU-time in the row's cluster (TOTAL: in these clusters); - = no samples")
	} else {
		t.Notes = append(t.Notes, "efficiency = used / allocated GPU-time; share = of all allocated GPU-time in the cluster; - = no samples")
	}
	return t
}

func zoneName(loc *time.Location, t time.Time) string {
	if loc == time.Local {
		n, _ := t.Zone()
		return n
	}
	return loc.String()
}

func periodName(p timespec.Period) string {
	if p == timespec.None {
		return "total"
	}
	return string(p)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
