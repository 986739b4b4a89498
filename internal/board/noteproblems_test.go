package board

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestBuildClusterNoteOfOwnCluster: a head whose cluster.name ("cluster",
// the default) is not its agents' cluster ("demo") kept a note in force
// that no cell showed, and the board listed no problem: the note's
// cluster had no node on the board, so it was taken for another board's.
// A note of the board's own cluster that no cell shows is a problem.
func TestBuildClusterNoteOfOwnCluster(t *testing.T) {
	g := func(i int) *int { return &i }
	n := fresh("gpu04", gpu(0), gpu(0))
	n.Cluster = "demo"
	notes := []Note{
		{ID: 3, Cluster: "cluster", Node: "gpu04"},
		{ID: 4, Cluster: "cluster", Node: "gpu04", GPU: g(1)},
		{ID: 5, Cluster: "red", Node: "gpu04"}, // another cluster's board shows it
	}
	b := BuildCluster("cluster", []record.Live{n}, nil, notes, now)
	want := []Problem{{Err: "note 3 on gpu04: no such node on the board"}, {Err: "note 4 on gpu04:1: no such node on the board"}}
	if d := cmp.Diff(want, b.NoteProblems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	for _, g := range b.Nodes[0].GPUs {
		if g.State != Free || len(g.Notes) != 0 {
			t.Errorf("gpu04:%d %s with notes %v: another cluster's note attached", g.Index, g.State, g.Notes)
		}
	}
}
