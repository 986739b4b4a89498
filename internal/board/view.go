package board

import (
	"cmp"
	"slices"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// View is the board as it is shown: one built board with how it was had
// and what every rendering of it derives (the stale nodes, the agents'
// age, the page's groups). The web page (internal/web), the JSON
// documents (doc.go: the API and --format json) and the text of gpuacct
// free and status (gpuacct/boardcmd) are all rendered from a View; each
// formats it, none derives its own copy of the board.
type View struct {
	Board *Board
	// Meta is how the board was had, as its JSON documents say it.
	Meta Meta
	// SlurmAsked is false when Slurm was not asked (no reader, --no-slurm).
	SlurmAsked bool
	// NotesError is why the notes could not be read ("" when read).
	NotesError string
	// Stale names the stale nodes, in the board's order.
	Stale []string
	// Agents is the oldest fresh snapshot's time: how old the agents'
	// word is. Zero when no node is fresh.
	Agents time.Time
	// Groups are the nodes under their first partition, their GPUs split
	// by model, sorted by partition and model: the page's sections.
	Groups []Group
	// Troubled are the nodes a large board's summary lists first, in the
	// board's order: a person cannot find them among thousands of cells.
	Troubled []Trouble
}

// Trouble is a node in trouble and why: "stale", "down", "drained" (or
// draining) and "foreign" (a process outside its GPUs' jobs), in that
// order.
type Trouble struct {
	Node *Node
	Why  []string
}

// Group is the GPUs of one model on the nodes whose first partition is
// Partition ("" for none, as Model is for a node without GPUs).
type Group struct {
	Partition, Model string
	// Free counts the group's free GPUs (IsFree), Total all of them.
	Free, Total int
	// States counts the group's GPUs by state: the summary's row.
	States map[State]int
	Rows   []Row
}

// Row is one node's GPUs of its group's model.
type Row struct {
	Node *Node
	// Also are the node's other partitions.
	Also []string
	GPUs []*GPU
}

// View is the view of s, shared as s is: a caller that changes it (web
// sets its Meta.Team) changes a copy. The board stays the snapshot's.
func (s *Snapshot) View() *View {
	if s.view != nil {
		return s.view
	}
	return newView(s)
}

func newView(s *Snapshot) *View { return NewView(&s.Board, s.Meta, s.SlurmAsked, s.NotesError) }

// NewView is the view of b had as m says; b is shared, not copied.
func NewView(b *Board, m Meta, slurmAsked bool, notesError string) *View {
	v := &View{Board: b, Meta: m, SlurmAsked: slurmAsked, NotesError: notesError}
	for _, n := range b.Nodes {
		if n.Stale {
			v.Stale = append(v.Stale, n.Name)
		} else if v.Agents.IsZero() || n.SnapshotAt.Before(v.Agents) {
			v.Agents = n.SnapshotAt
		}
	}
	v.Groups = groups(b.Nodes)
	for i := range b.Nodes {
		if why := troubles(&b.Nodes[i]); why != nil {
			v.Troubled = append(v.Troubled, Trouble{Node: &b.Nodes[i], Why: why})
		}
	}
	return v
}

// troubles are why n is in trouble; nil when it is not.
func troubles(n *Node) []string {
	has := func(s State) bool {
		return slices.ContainsFunc(n.GPUs, func(g GPU) bool { return g.State == s })
	}
	var why []string
	if n.Stale || has(Stale) {
		why = append(why, "stale")
	}
	if has(Down) || n.InSlurm && (n.Condition == slurmstate.Down || n.NotResponding) {
		why = append(why, "down")
	}
	if has(Drained) || n.Condition == slurmstate.Drained || n.Condition == slurmstate.Draining {
		why = append(why, "drained")
	}
	if has(Foreign) {
		why = append(why, "foreign")
	}
	return why
}

// groups puts each node under its first partition, its GPUs split by
// model; a node without GPUs has a row of no model. Within a group the
// rows keep the board's order.
func groups(nodes []Node) []Group {
	type keyed struct {
		part, model string
		row         Row
	}
	var rows []keyed
	for i := range nodes {
		n := &nodes[i]
		k := keyed{row: Row{Node: n}}
		if len(n.Partitions) > 0 {
			k.part, k.row.Also = n.Partitions[0], n.Partitions[1:]
		}
		if len(n.GPUs) == 0 {
			rows = append(rows, k)
			continue
		}
		first := len(rows)
		for j := range n.GPUs {
			g := &n.GPUs[j]
			at := first
			for at < len(rows) && rows[at].model != g.Model {
				at++
			}
			if at == len(rows) {
				k.model = g.Model
				rows = append(rows, k)
			}
			rows[at].row.GPUs = append(rows[at].row.GPUs, g)
		}
	}
	slices.SortStableFunc(rows, func(a, b keyed) int { return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.model, b.model)) })
	var out []Group
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Partition != r.part || out[len(out)-1].Model != r.model {
			out = append(out, Group{Partition: r.part, Model: r.model, States: map[State]int{}})
		}
		g := &out[len(out)-1]
		g.Rows = append(g.Rows, r.row)
		for _, c := range r.row.GPUs {
			g.States[c.State]++
			g.Total++
			if IsFree(c.State) && len(c.Slices) == 0 { // a GPU in slices is not had whole
				g.Free++
			}
		}
	}
	return out
}
