package report

import (
	"context"
	"sort"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// slurmTreeSchema is the first schema version with slurm_accounts: an
// older ledger has no account tree, and its accounts are all top-level.
const slurmTreeSchema = 8

// Hierarchy places teams under organisations: the mapping file's parent
// keys when a file is in use, else Slurm's account tree (each account's
// parent account) as ingest last recorded it. A team neither knows is at
// the top, as is (unassigned).
type Hierarchy struct {
	mapping *teams.Mapping
	// slurm is cluster -> account -> parent account, "" under root.
	slurm map[string]map[string]string
	// paths memoizes Path: reports ask once per rollup row.
	paths map[treeKey][]string
	// sole is the cluster asked about as "": report rows keep no
	// cluster when they are of one (see in).
	sole string
}

// in is h with cluster "" standing for cluster c.
func (h *Hierarchy) in(c string) *Hierarchy {
	x := *h
	x.sole = c
	return &x
}

type treeKey struct{ cluster, team string }

// Hierarchy reads the organisations above the teams of mapping m.
func (d *Ledger) Hierarchy(ctx context.Context, m *teams.Mapping) (*Hierarchy, error) {
	h := FlatHierarchy(m)
	if h.mapping.Mapped() {
		return h, nil
	}
	if !d.tree {
		return h, nil
	}
	accts, err := d.st.SlurmAccounts(ctx)
	if err != nil {
		return nil, d.wrap(err)
	}
	h.slurm = map[string]map[string]string{}
	for _, a := range accts {
		p := a.Parent
		if p == "root" {
			p = ""
		}
		if h.slurm[a.Cluster] == nil {
			h.slurm[a.Cluster] = map[string]string{}
		}
		h.slurm[a.Cluster][a.Account] = p
	}
	return h, nil
}

// FlatHierarchy is the hierarchy of a mapping with no organisations
// read: the mapping file's, or every account at the top.
func FlatHierarchy(m *teams.Mapping) *Hierarchy {
	if m == nil {
		m = &teams.Mapping{}
	}
	return &Hierarchy{mapping: m, paths: map[treeKey][]string{}}
}

func (h *Hierarchy) parent(cluster, team string) string {
	if h.mapping.Mapped() {
		return h.mapping.Parent(team)
	}
	if cluster == "" {
		cluster = h.sole
	}
	return h.slurm[cluster][team]
}

// Under reports whether team, or an organisation above it, is in want.
func (h *Hierarchy) Under(cluster, team string, want map[string]bool) bool {
	for _, t := range h.Path(cluster, team) {
		if want[t] {
			return true
		}
	}
	return false
}

// Path is team's chain of organisations from the top down, ending with
// team itself. A chain longer than teams.MaxDepth, or one that comes back
// on itself (the mapping file refuses both; Slurm's recorded tree should
// hold neither), is cut there.
func (h *Hierarchy) Path(cluster, team string) []string {
	k := treeKey{cluster, team}
	if p, ok := h.paths[k]; ok {
		return p
	}
	up := []string{team}
	seen := map[string]bool{team: true}
	for p := h.parent(cluster, team); p != "" && !seen[p] && len(up) < teams.MaxDepth; p = h.parent(cluster, p) {
		seen[p] = true
		up = append(up, p)
	}
	path := make([]string, len(up))
	for i, t := range up {
		path[len(up)-1-i] = t
	}
	h.paths[k] = path
	return path
}

// At is team rolled up to level n (1: the top organisations): its
// ancestor n levels down from the top, or team itself when it is no
// deeper; n <= 0 leaves it.
func (h *Hierarchy) At(cluster, team string, n int) string {
	if n <= 0 {
		return team
	}
	if p := h.Path(cluster, team); len(p) > n {
		return p[n-1]
	}
	return team
}

// Names are every organisation the hierarchy knows of cluster's (all of a
// mapping file's): the names --teams may take besides the teams.
func (h *Hierarchy) Names() []string {
	if h.mapping.Mapped() {
		return h.mapping.Names()
	}
	seen := map[string]bool{}
	for _, accts := range h.slurm {
		for a, p := range accts {
			seen[a] = true
			if p != "" {
				seen[p] = true
			}
		}
	}
	return sortedKeys(seen)
}

// treeNode is one organisation or team of a tree report: its sum, the
// users charged to it directly and the nodes under it.
type treeNode struct {
	name     string
	parent   string
	level    int
	usage    Usage
	users    []*group
	byUser   map[string]*group
	children []*treeNode
}

// buildTree arranges one bucket's (team, user) groups of one cluster
// into the hierarchy cut at level (0: whole), summing every node; it
// returns the top nodes.
func buildTree(h *Hierarchy, cluster string, gs []*group, level int) []*treeNode {
	nodes := map[string]*treeNode{}
	var top []*treeNode
	for _, g := range gs {
		path := h.Path(cluster, g.key.a)
		if level > 0 && len(path) > level {
			path = path[:level]
		}
		var up *treeNode
		for i, name := range path {
			n := nodes[name]
			if n == nil {
				n = &treeNode{name: name, level: i + 1}
				if up != nil {
					n.parent = up.name
					up.children = append(up.children, n)
				} else {
					top = append(top, n)
				}
				nodes[name] = n
			}
			n.usage.Add(g.usage)
			up = n
		}
		// A user of two teams cut to one node is one row of the node.
		u := up.byUser[g.key.b]
		if u == nil {
			u = &group{key: groupKey{bucket: g.key.bucket, cluster: g.key.cluster, a: up.name, b: g.key.b}}
			if up.byUser == nil {
				up.byUser = map[string]*group{}
			}
			up.byUser[g.key.b] = u
			up.users = append(up.users, u)
		}
		u.usage.Add(g.usage)
	}
	return top
}

// walkTree visits the nodes depth first, each before its users and its
// users before the nodes under it (sreport's order), biggest first.
func walkTree(top []*treeNode, node func(*treeNode), user func(*treeNode, *group)) {
	sortNodes(top)
	for _, n := range top {
		node(n)
		sortGroups(n.users)
		for _, g := range n.users {
			user(n, g)
		}
		walkTree(n.children, node, user)
	}
}

func sortNodes(ns []*treeNode) {
	sort.Slice(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if a.usage.AllocS != b.usage.AllocS {
			return a.usage.AllocS > b.usage.AllocS
		}
		return a.name < b.name
	})
}

func sortGroups(gs []*group) {
	sort.Slice(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		if a.usage.AllocS != b.usage.AllocS {
			return a.usage.AllocS > b.usage.AllocS
		}
		return a.key.b < b.key.b
	})
}

// treeColumns follow the usage columns of a tree report, for machine
// readers (the terminal indents instead): the organisation above the
// row's team ("" at the top) and the team's level (1: the top).
func treeColumns() []table.Column {
	return []table.Column{
		{Key: "parent", Title: "PARENT", Kind: table.Text, Machine: true},
		{Key: "level", Title: "LEVEL", Kind: table.Int, Machine: true},
	}
}

// treeRows are one bucket's tree report rows: cluster by cluster, each
// organisation and team with the sum of everything under it, its own
// users below it, then the nodes under it; a TOTAL line (terminal only)
// sums the top nodes. label names a team or user, prefix gives the
// period and cluster cells, clusterAlloc the share's denominator,
// usageCells the usage cells (columnsOf's).
func treeRows(h *Hierarchy, level int, gs []*group, label func(string) string, prefix func(string, bool) []any, clusterAlloc func(string, bool) int64, usageCells func(Usage, int64) []any) []table.Row {
	byCluster := map[string][]*group{}
	for _, g := range gs {
		byCluster[g.key.cluster] = append(byCluster[g.key.cluster], g)
	}
	clusters := make([]string, 0, len(byCluster))
	for c := range byCluster {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	var rows []table.Row
	var sum Usage
	for _, c := range clusters {
		all := clusterAlloc(c, false)
		row := func(n *treeNode, user any, u Usage, child bool) {
			var parent any
			if n.parent != "" {
				parent = n.parent
			}
			cells := append(prefix(c, false), label(n.name), user)
			cells = append(append(cells, usageCells(u, all)...), parent, int64(n.level))
			rows = append(rows, table.Row{Cells: cells, Ref: float64(all), Child: child, Indent: n.level - 1})
		}
		walkTree(buildTree(h, c, byCluster[c], level), func(n *treeNode) {
			row(n, nil, n.usage, false)
			if n.level == 1 {
				sum.Add(n.usage)
			}
		}, func(n *treeNode, g *group) {
			row(n, label(g.key.b), g.usage, true)
		})
	}
	if len(rows) > 0 {
		all := clusterAlloc("", true)
		cells := append(prefix("", true), "TOTAL", nil)
		cells = append(append(cells, usageCells(sum, all)...), nil, nil)
		rows = append(rows, table.Row{Cells: cells, Ref: float64(all), Footer: true})
	}
	return rows
}

// checkLevel refuses a roll-up level a report cannot take.
func checkLevel(kind string, level int) error {
	switch {
	case level < 0:
		return badInput("--level %d: levels count from 1 (the top organisations)", level)
	case level > teams.MaxDepth:
		return badInput("--level %d: trees are at most %d levels deep", level, teams.MaxDepth)
	case level > 0 && kind != "teams" && kind != "tree":
		return badInput("--level rolls teams up to their organisations: use it with report teams, tree or top --by teams")
	}
	return nil
}
