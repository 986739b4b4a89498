package board

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// groupsOf is what a view's groups say: per group its key, counts and
// rows as node:GPU indexes.
type groupOf struct {
	Partition, Model string
	Free, Total      int
	Rows             []string
}

func groupsOf(v *View) []groupOf {
	var out []groupOf
	for _, g := range v.Groups {
		gv := groupOf{Partition: g.Partition, Model: g.Model, Free: g.Free, Total: g.Total}
		for _, r := range g.Rows {
			s := r.Node.Name + ":"
			for _, c := range r.GPUs {
				s += string(rune('0' + c.Index))
			}
			for _, a := range r.Also {
				s += "+" + a
			}
			gv.Rows = append(gv.Rows, s)
		}
		out = append(out, gv)
	}
	return out
}

func TestViewGroups(t *testing.T) {
	a100 := func(g record.LiveGPU) record.LiveGPU { g.Model = "NVIDIA A100"; return g }
	twoParts := snode("n2", slurmstate.Idle, 3)
	twoParts.Partitions = []string{"gpu", "long"}
	bare := snode("n0", slurmstate.Idle, 0)
	bare.Partitions = nil
	for _, tc := range []struct {
		name   string
		lives  []record.Live
		slurm  *slurmstate.State
		groups []groupOf
		stale  []string
		agents time.Time
	}{
		{
			name: "by first partition and model, rows in the board's order",
			lives: []record.Live{
				fresh("n3", gpu(0), gpu(90, 7)),
				fresh("n2", a100(gpu(0)), gpu(0), a100(gpu(50, 8))),
				fresh("n1", gpu(0)),
			},
			slurm: slurm([]slurmstate.Node{snode("n1", slurmstate.Idle, 1), twoParts, snode("n3", slurmstate.Mixed, 2)}),
			groups: []groupOf{
				{Partition: "gpu", Model: "NVIDIA A100", Total: 2, Free: 1, Rows: []string{"n2:02+long"}},
				{Partition: "gpu", Model: "NVIDIA H100", Total: 4, Free: 3, Rows: []string{"n1:0", "n2:1+long", "n3:01"}},
			},
			agents: now.Add(-5 * time.Second),
		},
		{
			name:  "no Slurm: no partition; a node of no GPU has a row of no model; stale nodes named",
			lives: []record.Live{fresh("n1", gpu(0)), {Schema: record.LiveSchema, Node: "n9", Time: now.Add(-time.Hour), Interval: 10, GPUs: []record.LiveGPU{{Index: 0, Model: "NVIDIA L4"}}}, fresh("n0")},
			groups: []groupOf{
				{Rows: []string{"n0:"}},
				{Model: "NVIDIA H100", Total: 1, Free: 1, Rows: []string{"n1:0"}},
				{Model: "NVIDIA L4", Total: 1, Rows: []string{"n9:0"}},
			},
			stale:  []string{"n9"},
			agents: now.Add(-5 * time.Second),
		},
		{
			name:   "nothing fresh: no agents' time",
			lives:  []record.Live{{Schema: record.LiveSchema, Node: "n9", Time: now.Add(-time.Hour), Interval: 10}},
			groups: []groupOf{{Rows: []string{"n9:"}}},
			stale:  []string{"n9"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Build(tc.lives, tc.slurm, nil, now)
			v := NewView(&b, Meta{}, tc.slurm != nil, "")
			if diff := cmp.Diff(tc.groups, groupsOf(v)); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stale, v.Stale); diff != "" {
				t.Errorf("stale (-want +got):\n%s", diff)
			}
			if !v.Agents.Equal(tc.agents) {
				t.Errorf("agents at %v, want %v", v.Agents, tc.agents)
			}
		})
	}
}

// A snapshot the source built carries its view, made once: every asker
// of that board renders the same one; one made by hand makes its own.
func TestSnapshotViewMadeOnce(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1", gpu(0)))
	src := NewSource(SourceOptions{LiveDir: dir, Now: func() time.Time { return now }, MaxAge: time.Hour})
	s := src.Current(context.Background())
	if s.View() != s.View() {
		t.Error("a built snapshot's view is made again for each asker")
	}
	if got := s.View().Free().FreeTotal; got != 1 {
		t.Errorf("free total %d, want 1", got)
	}
	hand := &Snapshot{Board: s.Board}
	if hand.View() == s.View() {
		t.Error("a snapshot made by hand shares another's view")
	}
}

// The summary of a large board: each group's GPUs counted by state, and
// the nodes in trouble named with why, in the board's order.
func TestViewSummary(t *testing.T) {
	down := snode("n4", slurmstate.Down, 1)
	down.NotResponding = true
	foreign := withProcs(gpu(40, 7), record.LiveProc{PID: 9, User: "mallory", Job: 99})
	lives := []record.Live{
		fresh("n1", gpu(90, 7), gpu(0), idleSince(gpu(0, 8))),
		fresh("n2", gpu(0), gpu(0)),
		fresh("n3", foreign),
		fresh("n4", gpu(0)),
		{Schema: record.LiveSchema, Node: "n5", Time: now.Add(-time.Hour), Interval: 10, GPUs: []record.LiveGPU{{Index: 0, Model: "NVIDIA H100"}}},
	}
	st := slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 3), snode("n2", slurmstate.Drained, 2), snode("n3", slurmstate.Mixed, 1), down,
		snode("n5", slurmstate.Idle, 1)})
	b := Build(lives, st, nil, now)
	v := NewView(&b, Meta{}, true, "")
	var states []map[State]int
	for _, g := range v.Groups {
		states = append(states, g.States)
	}
	want := []map[State]int{{Busy: 1, Free: 1, Idle: 1, Drained: 2, Foreign: 1, Down: 1, Stale: 1}}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("group states (-want +got):\n%s", diff)
	}
	var troubled []string
	for _, tr := range v.Troubled {
		troubled = append(troubled, tr.Node.Name+":"+strings.Join(tr.Why, ","))
	}
	if diff := cmp.Diff([]string{"n2:drained", "n3:foreign", "n4:down", "n5:stale"}, troubled); diff != "" {
		t.Errorf("troubled nodes (-want +got):\n%s", diff)
	}
}
