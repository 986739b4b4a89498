package boardcmd

import (
	"cmp"
	"slices"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/report"
)

// SliceCount is one MIG profile on one node as Slurm schedules it: a
// typed gres (Type=1g.10gb) whose count is the node's slices of that
// profile. Slurm alone says which are held: the agents' snapshots name
// no profile.
type SliceCount struct {
	Node    string `json:"node"`
	Profile string `json:"profile"`
	// GPUEquivalent is one slice's share of its whole GPU (1g.10gb: 1/7).
	GPUEquivalent float64 `json:"gpu_equivalent"`
	Total         int     `json:"total"`
	// Used is how many jobs hold, -1 when Slurm said only the node's
	// total; Free those a job can have now, Reserved those of a
	// reservation in force (free to its users only, not in Free).
	Used     int `json:"used"`
	Free     int `json:"free"`
	Reserved int `json:"reserved,omitempty"`
}

// migSlices counts the MIG slices of nodes (nil: every node Slurm
// lists), sorted by node, then profile size; nil without slices, so a
// site without MIG sees what it saw before.
func (v *view) migSlices(nodes []board.Node) []SliceCount {
	if v.slurm == nil {
		return nil
	}
	var want map[string]bool
	if nodes != nil {
		want = map[string]bool{}
		for _, n := range nodes {
			want[n.Name] = true
		}
	}
	var out []SliceCount
	// reserved: whether each board node is under a reservation in force,
	// made at the first slice (a site without MIG reads no node twice)
	var reserved map[string]bool
	for _, sn := range v.slurm.Nodes {
		if want != nil && !want[sn.Name] {
			continue
		}
		for _, g := range sn.GPUs {
			if _, _, ok := report.MIGProfile(g.Type); !ok {
				continue
			}
			if reserved == nil {
				reserved = make(map[string]bool, len(v.Board.Nodes))
				for i := range v.Board.Nodes {
					n := &v.Board.Nodes[i]
					if _, seen := reserved[n.Name]; !seen { // the first, as Board.Find
						reserved[n.Name] = len(n.Reservations) > 0
					}
				}
			}
			s := SliceCount{Node: sn.Name, Profile: g.Type, GPUEquivalent: report.GPUEquivalent(g.Type), Total: g.Count, Used: g.Used}
			if g.Used >= 0 && board.Schedulable(sn.Condition) && !sn.NotResponding {
				if reserved[sn.Name] {
					s.Reserved = max(g.Count-g.Used, 0)
				} else {
					s.Free = max(g.Count-g.Used, 0)
				}
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b SliceCount) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.GPUEquivalent, b.GPUEquivalent), cmp.Compare(a.Profile, b.Profile))
	})
	return out
}
