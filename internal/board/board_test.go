package board

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

var now = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

// fresh is a fresh snapshot of node (10 s interval, sampled 5 s ago).
func fresh(node string, gpus ...record.LiveGPU) record.Live {
	for i := range gpus {
		gpus[i].Index = i
		if gpus[i].Model == "" {
			gpus[i].Model = "NVIDIA H100"
		}
	}
	return record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: node, Time: now.Add(-5 * time.Second), Interval: 10, GPUs: gpus}
}

func gpu(util uint32, jobs ...uint64) record.LiveGPU {
	g := record.LiveGPU{Util: u32(util), MemUsedMiB: u64(0), MemTotalMiB: u64(81559)}
	for _, j := range jobs {
		g.Jobs = append(g.Jobs, record.LiveJob{Job: j, User: "alice", Account: "ml"})
	}
	return g
}

func idleSince(g record.LiveGPU) record.LiveGPU {
	t := now.Add(-2 * time.Hour)
	g.IdleSince = &t
	return g
}

func withProcs(g record.LiveGPU, procs ...record.LiveProc) record.LiveGPU {
	g.Procs = procs
	return g
}

func snode(name string, cond slurmstate.Condition, gpus int) slurmstate.Node {
	return slurmstate.Node{Name: name, Condition: cond, Partitions: []string{"gpu"},
		GPUs: []slurmstate.GPU{{Type: "h100", Count: gpus}}, GPUCount: gpus}
}

func slurm(nodes []slurmstate.Node, res ...slurmstate.Reservation) *slurmstate.State {
	return &slurmstate.State{Nodes: nodes, Reservations: res, At: now}
}

// view is what each case checks of a node.
type view struct {
	Name         string
	Stale        bool
	Reservations []string
	States       []State
}

func views(b Board) []view {
	var out []view
	for _, n := range b.Nodes {
		v := view{Name: n.Name, Stale: n.Stale, Reservations: n.Reservations}
		for _, g := range n.GPUs {
			v.States = append(v.States, g.State)
		}
		out = append(out, v)
	}
	return out
}

func TestBuildStates(t *testing.T) {
	old := fresh("n1", gpu(0))
	old.Time = now.Add(-31 * time.Second) // 3 × 10 s have passed
	edge := fresh("n1", gpu(0))
	edge.Time = now.Add(-30 * time.Second) // exactly 3 intervals: still fresh
	tests := []struct {
		name  string
		lives []record.Live
		slurm *slurmstate.State
		want  []view
	}{
		{"free", []record.Live{fresh("n1", gpu(0))}, slurm([]slurmstate.Node{snode("n1", slurmstate.Idle, 1)}),
			[]view{{Name: "n1", States: []State{Free}}}},
		{"busy and idle", []record.Live{fresh("n1", gpu(80, 7), gpu(0, 8))}, slurm([]slurmstate.Node{snode("n1", slurmstate.Allocated, 2)}),
			[]view{{Name: "n1", States: []State{Busy, Idle}}}},
		{"allocated with unknown utilization is busy, not idle", []record.Live{fresh("n1", record.LiveGPU{Jobs: []record.LiveJob{{Job: 7}}, Missing: []string{"util"}})},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 1)}),
			[]view{{Name: "n1", States: []State{Busy}}}},
		{"foreign: other job's process, flagged process, any process on an unheld gpu",
			[]record.Live{fresh("n1",
				withProcs(gpu(50, 7), record.LiveProc{PID: 1, Job: 7}, record.LiveProc{PID: 2, Job: 9}),
				withProcs(gpu(50, 7), record.LiveProc{PID: 3, Job: 7, Foreign: true}),
				withProcs(gpu(50), record.LiveProc{PID: 4, Job: 0}),
				withProcs(gpu(50, 7), record.LiveProc{PID: 5, Job: 7}),
				// job 0 unflagged: the agent could not read its cgroup
				withProcs(gpu(50, 7), record.LiveProc{PID: 6, Job: 0}))},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 5)}),
			[]view{{Name: "n1", States: []State{Foreign, Foreign, Foreign, Busy, Busy}}}},
		{"drained and draining: unheld gpus drained, held ones keep their use",
			[]record.Live{fresh("n1", gpu(0)), fresh("n2", gpu(90, 7), gpu(0))},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Drained, 1), snode("n2", slurmstate.Draining, 2)}),
			[]view{{Name: "n1", States: []State{Drained}}, {Name: "n2", States: []State{Busy, Drained}}}},
		{"down, not responding, unknown to slurm, or in a state taking no jobs",
			[]record.Live{fresh("n1", gpu(0)), fresh("n2", gpu(0)), fresh("n3", gpu(0)), fresh("n4", gpu(0))},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Down, 1),
				func() slurmstate.Node { n := snode("n2", slurmstate.Idle, 1); n.NotResponding = true; return n }(),
				snode("n4", "future", 1)}),
			[]view{{Name: "n1", States: []State{Down}}, {Name: "n2", States: []State{Down}}, {Name: "n3", States: []State{Down}}, {Name: "n4", States: []State{Down}}}},
		{"reserved now; a past or future reservation leaves it free",
			[]record.Live{fresh("n1", gpu(0), gpu(50, 7)), fresh("n2", gpu(0))},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 2), snode("n2", slurmstate.Idle, 1)},
				slurmstate.Reservation{Name: "maint", Start: now.Add(-time.Hour), End: now.Add(time.Hour), Nodes: []string{"n1"}},
				slurmstate.Reservation{Name: "open", Nodes: []string{"n1"}},
				slurmstate.Reservation{Name: "past", Start: now.Add(-2 * time.Hour), End: now, Nodes: []string{"n2"}},
				slurmstate.Reservation{Name: "later", Start: now.Add(time.Minute), End: now.Add(time.Hour), Nodes: []string{"n2"}}),
			[]view{{Name: "n1", Reservations: []string{"maint", "open"}, States: []State{Reserved, Busy}}, {Name: "n2", States: []State{Free}}}},
		{"idle by the agent's word: idle_since under its threshold (util 5 < 10) is idle, busy at util 0 without it only for older agents",
			[]record.Live{fresh("n1", idleSince(gpu(5, 7)), gpu(5, 8), gpu(0, 9))},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 3)}),
			[]view{{Name: "n1", States: []State{Idle, Busy, Idle}}}},
		{"allocated node: every cpu taken, an unheld gpu is not free (a gpu job would pend)",
			[]record.Live{fresh("n1", gpu(0), gpu(80, 7))},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Allocated, 2)}),
			[]view{{Name: "n1", States: []State{Busy, Busy}}}},
		{"slurm's gpus used cap the free ones: a job the agent has not heard of yet",
			[]record.Live{fresh("n1", gpu(0), gpu(0), gpu(0), gpu(80, 7))},
			slurm([]slurmstate.Node{func() slurmstate.Node { n := snode("n1", slurmstate.Mixed, 4); n.GPUsUsed = 2; return n }()}),
			[]view{{Name: "n1", States: []State{Free, Free, Busy, Busy}}}},
		{"slurm's gpus used cap booked and reserved gpus too",
			[]record.Live{fresh("n1", gpu(0), gpu(0))},
			slurm([]slurmstate.Node{func() slurmstate.Node { n := snode("n1", slurmstate.Mixed, 2); n.GPUsUsed = 2; return n }()},
				slurmstate.Reservation{Name: "maint", Nodes: []string{"n1"}}),
			[]view{{Name: "n1", Reservations: []string{"maint"}, States: []State{Busy, Busy}}}},
		{"stale snapshot is never free, whatever slurm says", []record.Live{old},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Idle, 1)}),
			[]view{{Name: "n1", Stale: true, States: []State{Stale}}}},
		{"a snapshot exactly three intervals old is fresh", []record.Live{edge},
			slurm([]slurmstate.Node{snode("n1", slurmstate.Idle, 1)}),
			[]view{{Name: "n1", States: []State{Free}}}},
		{"a slurm gpu node without a snapshot is stale with slurm's gpus", nil,
			slurm([]slurmstate.Node{snode("n1", slurmstate.Idle, 2), snode("cpu1", slurmstate.Idle, 0)}),
			[]view{{Name: "n1", Stale: true, States: []State{Stale, Stale}}}},
		{"without slurm: free and busy from the snapshot alone", []record.Live{fresh("n1", gpu(0), gpu(60, 3))}, nil,
			[]view{{Name: "n1", States: []State{Free, Busy}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Build(tt.lives, tt.slurm, nil, now)
			if b.Slurm != (tt.slurm != nil) {
				t.Errorf("Slurm = %v with state %v", b.Slurm, tt.slurm != nil)
			}
			if diff := cmp.Diff(tt.want, views(b)); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildCellsAndTotals(t *testing.T) {
	n1 := fresh("n1", gpu(0), gpu(0), gpu(0, 7), gpu(70, 8))
	n1.GPUs[3].MemUsedMiB = u64(1024)
	n1.GPUs[3].Procs = []record.LiveProc{{PID: 42, User: "bob", Job: 8, MemUsedMiB: 1024}}
	n1.GPUs[3].Jobs[0].User = "bob"
	n2 := fresh("n2", gpu(0))
	n2.GPUs[0].Model = "NVIDIA A100"
	n3 := fresh("n3", gpu(0))
	n3.Time = now.Add(-time.Hour)
	sn1 := snode("n1", slurmstate.Mixed, 4)
	sn1.Partitions = []string{"gpu", "long"}
	sn2 := snode("n2", slurmstate.Idle, 1)
	sn2.Reason = ""
	sn4 := snode("n4", slurmstate.Drained, 1)
	sn4.Reason = "bad gpu"
	st := slurm([]slurmstate.Node{sn1, sn2, snode("n3", slurmstate.Idle, 1), sn4},
		slurmstate.Reservation{Name: "team", Start: now.Add(-time.Hour), End: now.Add(time.Hour), Nodes: []string{"n2"}})
	b := Build([]record.Live{n3, n1, n2, n1}, st, nil, now)

	// A reserved GPU is not free (IsFree): it is counted apart, and a
	// node in two partitions is in both rows but counted once.
	wantTotals := Totals{
		FreeGPUs: 2, ReservedGPUs: 1,
		Free: []FreeCount{
			{Model: "NVIDIA A100", Partition: "gpu", Free: 0, Reserved: 1, Nodes: []NodeCount{{Node: "n2", Reserved: 1}}},
			{Model: "NVIDIA H100", Partition: "gpu", Free: 2, Nodes: []NodeCount{{Node: "n1", Count: 2}}},
			{Model: "NVIDIA H100", Partition: "long", Free: 2, Nodes: []NodeCount{{Node: "n1", Count: 2}}},
		},
		IdleAllocated: 1,
		RunningJobs:   2,
		StaleNodes:    2,
	}
	if diff := cmp.Diff(wantTotals, b.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	wantN1 := Node{Name: "n1", Cluster: "c1", Condition: slurmstate.Mixed, Partitions: []string{"gpu", "long"}, InSlurm: true,
		SnapshotAt: n1.Time, StaleAt: n1.Time.Add(30 * time.Second), GPUs: []GPU{
			{Index: 0, Model: "NVIDIA H100", State: Free, Util: u32(0), MemUsedMiB: u64(0), MemTotalMiB: u64(81559)},
			{Index: 1, Model: "NVIDIA H100", State: Free, Util: u32(0), MemUsedMiB: u64(0), MemTotalMiB: u64(81559)},
			{Index: 2, Model: "NVIDIA H100", State: Idle, Util: u32(0), MemUsedMiB: u64(0), MemTotalMiB: u64(81559),
				Jobs: []record.LiveJob{{Job: 7, User: "alice", Account: "ml"}}},
			{Index: 3, Model: "NVIDIA H100", State: Busy, Util: u32(70), MemUsedMiB: u64(1024), MemTotalMiB: u64(81559),
				Jobs:  []record.LiveJob{{Job: 8, User: "bob", Account: "ml"}},
				Procs: []record.LiveProc{{PID: 42, User: "bob", Job: 8, MemUsedMiB: 1024}}},
		}}
	got, err := b.Find("n1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantN1, *got); diff != "" {
		t.Errorf("node n1 (-want +got):\n%s", diff)
	}
	var names []string
	for _, n := range b.Nodes {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"n1", "n2", "n3", "n4"}, names); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if _, err := b.Find("n9"); err == nil {
		t.Error("Find(n9) found a node that is not there")
	}
}

func TestBuildNotes(t *testing.T) {
	g := func(i int) *int { return &i }
	n1 := fresh("gpu01", gpu(0), gpu(0))
	n2 := fresh("gpu02", gpu(0))
	n2.Cluster = "c2"
	lives := []record.Live{n1, n2}
	tests := []struct {
		name     string
		notes    []Note
		states   map[string][]State
		problems []Problem
	}{
		{"a note of the node's cluster books its gpu",
			[]Note{{ID: 1, Cluster: "c1", Node: "gpu01", GPU: g(1)}},
			map[string][]State{"gpu01": {Free, Booked}, "gpu02": {Free}}, nil},
		{"a note without a cluster books any cluster's node of that name",
			[]Note{{ID: 2, Node: "gpu02"}},
			map[string][]State{"gpu01": {Free, Free}, "gpu02": {Booked}}, nil},
		{"another cluster's gpu01 is not booked by c2's note",
			[]Note{{ID: 3, Cluster: "c2", Node: "gpu01", GPU: g(0)}},
			map[string][]State{"gpu01": {Free, Free}, "gpu02": {Free}},
			[]Problem{{Err: "note 3 on gpu01:0: no such node on the board"}}},
		{"a note of a cluster the board does not show is left out",
			[]Note{{ID: 4, Cluster: "c9", Node: "gpu01"}},
			map[string][]State{"gpu01": {Free, Free}, "gpu02": {Free}}, nil},
		{"a gpu the node lacks and a node not on the board are problems",
			[]Note{{ID: 7, Cluster: "c1", Node: "gpu01", GPU: g(9)}, {ID: 8, Node: "gpu09"}},
			map[string][]State{"gpu01": {Free, Free}, "gpu02": {Free}},
			[]Problem{{Err: "note 7 on gpu01:9: no such GPU on the board"}, {Err: "note 8 on gpu09: no such node on the board"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Build(lives, nil, tt.notes, now)
			got := map[string][]State{}
			for _, n := range b.Nodes {
				for _, g := range n.GPUs {
					got[n.Name] = append(got[n.Name], g.State)
				}
			}
			if d := cmp.Diff(tt.states, got); d != "" {
				t.Errorf("states (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.problems, b.NoteProblems); d != "" {
				t.Errorf("note problems (-want +got):\n%s", d)
			}
		})
	}
}

// TestBuildClusterSlurmOnlyNodes: on a ledger shared by clusters, a node
// Slurm lists without a snapshot is of the board's cluster: another
// cluster's notes neither attach to it nor become this board's problems.
func TestBuildClusterSlurmOnlyNodes(t *testing.T) {
	g := func(i int) *int { return &i }
	lives := []record.Live{fresh("gpu01", gpu(0))} // of c1
	st := slurm([]slurmstate.Node{snode("gpu01", slurmstate.Idle, 1), snode("gpu03", slurmstate.Idle, 1)})
	notes := []Note{
		{ID: 1, Cluster: "c2", Node: "gpu05"},            // c2's own node
		{ID: 2, Cluster: "c2", Node: "gpu03", GPU: g(0)}, // c2's gpu03, not ours
		{ID: 3, Cluster: "c1", Node: "gpu03"},            // ours
	}
	tests := []struct {
		name     string
		cluster  string
		gpu03    []int64 // ids of the notes gpu03 shows
		problems []Problem
	}{
		{"the board's cluster named", "c1", []int64{3}, nil},
		{"one-cluster ledger: a slurm-only node takes any cluster's notes", "", []int64{3, 2},
			[]Problem{{Err: "note 1 on gpu05: no such node on the board"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := BuildCluster(tt.cluster, lives, st, notes, now)
			n, err := b.Find("gpu03")
			if err != nil {
				t.Fatal(err)
			}
			if n.Cluster != tt.cluster {
				t.Errorf("gpu03 of cluster %q, want %q", n.Cluster, tt.cluster)
			}
			var ids []int64
			for _, nt := range n.Notes {
				ids = append(ids, nt.ID)
			}
			for _, g := range n.GPUs {
				for _, nt := range g.Notes {
					ids = append(ids, nt.ID)
				}
			}
			if d := cmp.Diff(tt.gpu03, ids); d != "" {
				t.Errorf("notes on gpu03 (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.problems, b.NoteProblems); d != "" {
				t.Errorf("note problems (-want +got):\n%s", d)
			}
		})
	}
}

// TestAged: a board aged past a snapshot's life shows that node stale,
// totals with it, and leaves the shared board as it was.
func TestAged(t *testing.T) {
	b := Build([]record.Live{fresh("n1", gpu(0)), fresh("n2", gpu(0))}, nil, nil, now)
	b.Nodes[1].StaleAt = now.Add(time.Hour) // n2's agent runs a slower interval
	later := b.Aged(now.Add(time.Minute))
	if !later.At.Equal(now.Add(time.Minute)) {
		t.Errorf("aged board at %v", later.At)
	}
	if diff := cmp.Diff([]view{{Name: "n1", Stale: true, States: []State{Stale}}, {Name: "n2", States: []State{Free}}}, views(later)); diff != "" {
		t.Errorf("aged (-want +got):\n%s", diff)
	}
	if later.Totals.StaleNodes != 1 || len(later.Totals.Free) != 1 || later.Totals.Free[0].Free != 1 {
		t.Errorf("aged totals %+v", later.Totals)
	}
	if diff := cmp.Diff([]view{{Name: "n1", States: []State{Free}}, {Name: "n2", States: []State{Free}}}, views(b)); diff != "" {
		t.Errorf("the board aged was changed (-want +got):\n%s", diff)
	}
	if b.Totals.StaleNodes != 0 {
		t.Errorf("the board aged has %d stale nodes", b.Totals.StaleNodes)
	}
}
