package demo

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// Every role has its place on the demo's default cluster; smaller ones
// get what fits, and a free or reserved pool GPU is always kept.
func TestLayout(t *testing.T) {
	P, H, S, B, D, X := pool, held, stray, booked, draining, drained
	for _, tc := range []struct {
		nodes, gpus          int
		roles                [][]role
		drained, reserved    int
		keepFree0, keepFree1 int
	}{
		{4, 4, [][]role{{P, H, S, B}, {P, P, P, P}, {P, P, P, P}, {D, D, X, X}}, 3, 2, 0, 1},
		{3, 4, [][]role{{P, H, S, B}, {P, P, P, P}, {D, D, X, X}}, 2, -1, 0, 1},
		{2, 8, [][]role{{P, H, S, B, P, P, P, P}, {D, D, D, D, X, X, X, X}}, 1, -1, 1, 0},
		{1, 1, [][]role{{P}}, -1, -1, 0, 0},
		{2, 1, [][]role{{P}, {X}}, 1, -1, 0, 0},
	} {
		l := newLayout(tc.nodes, tc.gpus)
		if d := cmp.Diff(tc.roles, l.roles); d != "" {
			t.Errorf("%d×%d roles (-want +got):\n%s", tc.nodes, tc.gpus, d)
		}
		if l.drainedNode != tc.drained || l.reservedNode != tc.reserved {
			t.Errorf("%d×%d: drained node %d, reserved %d; want %d, %d", tc.nodes, tc.gpus, l.drainedNode, l.reservedNode, tc.drained, tc.reserved)
		}
		if got := l.keepFree(0); got != tc.keepFree0 {
			t.Errorf("%d×%d: keep %d free on node 0, want %d", tc.nodes, tc.gpus, got, tc.keepFree0)
		}
		if tc.nodes > 1 {
			if got := l.keepFree(1); got != tc.keepFree1 {
				t.Errorf("%d×%d: keep %d free on node 1, want %d", tc.nodes, tc.gpus, got, tc.keepFree1)
			}
		}
	}
}

// The synthetic Slurm follows the jobs: a node is idle, mixed or
// allocated by its GPUs held, the drained node draining while its job
// runs and drained after, and the reservation covers the reserved node.
func TestSlurmView(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC)
	l, err := NewLive(LiveOptions{Info: Info{Cluster: "demo", Nodes: 4, GPUs: 2, Model: "h100"}, LiveDir: t.TempDir(), WorkDir: t.TempDir(),
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	j := &liveJob{}
	l.nodes[0].holder[0] = j
	l.nodes[1].holder = []*liveJob{j, j}
	l.nodes[3].holder[0] = j
	st, err := l.Slurm(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name       string
		Condition  slurmstate.Condition
		State      string
		Partitions []string
		Used       int
	}
	var got []row
	for _, n := range st.Nodes {
		got = append(got, row{n.Name, n.Condition, n.State, n.Partitions, n.GPUsUsed})
	}
	want := []row{
		{"gpu01", slurmstate.Mixed, "MIXED", []string{"gpu", "long"}, 1},
		{"gpu02", slurmstate.Allocated, "ALLOCATED", []string{"gpu", "long"}, 2},
		{"gpu03", slurmstate.Idle, "IDLE", []string{"gpu"}, 0},
		{"gpu04", slurmstate.Draining, "MIXED+DRAIN", []string{"gpu"}, 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}
	if st.Nodes[3].Reason != drainReason {
		t.Errorf("drain reason %q", st.Nodes[3].Reason)
	}
	if len(st.Reservations) != 1 || st.Reservations[0].Name != reservationName || !cmp.Equal(st.Reservations[0].Nodes, []string{"gpu03"}) ||
		now.Before(st.Reservations[0].Start) || !now.Before(st.Reservations[0].End) {
		t.Errorf("reservations %+v", st.Reservations)
	}
	l.nodes[3].holder[0] = nil
	st, _ = l.Slurm(context.Background())
	if c := st.Nodes[3].Condition; c != slurmstate.Drained {
		t.Errorf("drained node without jobs is %s", c)
	}
}
