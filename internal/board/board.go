package board

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// State is what one GPU is doing, as the board shows it.
type State string

// The states, in the order Build decides them: a stale node's GPUs are
// stale whatever else is known, so a silent node is never shown free.
const (
	// Stale: the node's snapshot is missing or older than Time + 3 × Interval.
	Stale State = "stale"
	// Down: Slurm has the node down, not responding, or in a state that
	// takes no jobs (or does not know the node at all).
	Down State = "down"
	// Foreign: a process that is not of the GPU's job, or any process on
	// a GPU no job holds.
	Foreign State = "foreign"
	// Idle: allocated, and idle by the agent's own rule and threshold
	// (IdleSince set); a snapshot without IdleSince (an older agent) is
	// judged by utilization under IdleUtil.
	Idle State = "idle"
	// Busy: allocated and working; also an unheld GPU that Slurm has
	// given away before its agent heard (the node ALLOCATED, or more of
	// its GPUs in use by Slurm's count than the agent sees).
	Busy State = "busy"
	// Drained: no job holds it and Slurm drains the node.
	Drained State = "drained"
	// Booked: free, but a note in force claims it (or its whole node).
	Booked State = "booked"
	// Reserved: free, but on a node of a reservation in force now.
	Reserved State = "reserved"
	// Free: no job holds it and Slurm would give it to one.
	Free State = "free"
)

// IsFree is the one definition of a free GPU: gpuacct free and status,
// the API and the board page all count by it. A GPU in state s is free
// when no job holds it and Slurm would give it to any job now; a reserved
// one (free to the reservation's users only), a booked one (a note
// claims it), and one on a drained, down or stale node are not free.
func IsFree(s State) bool { return s == Free }

// IdleUtil is the utilization (percent) under which an allocated GPU of
// a snapshot without IdleSince is idle, as the agent's idle_threshold
// default.
const IdleUtil = 1

// StaleAfter is how many intervals a snapshot lives.
const StaleAfter = 3

// Board is the cluster at one moment.
type Board struct {
	At time.Time
	// Slurm is false when Slurm's view was not had (unreachable, or
	// skipped): conditions, partitions and reservations are then unknown
	// and free means only "no job on it as the agent sees it".
	Slurm   bool
	SlurmAt time.Time
	Nodes   []Node
	Totals  Totals
	// NoteProblems are the notes in force that no cell shows: on a node
	// not on the board or a GPU index its node lacks. Notes of a cluster
	// no node of the board is in belong to another board and are left out.
	NoteProblems []Problem
}

// Node is one node: Slurm's view of it and its GPUs.
type Node struct {
	Name    string
	Cluster string
	// Condition, NotResponding, Reason and Partitions are Slurm's; InSlurm
	// is false when Slurm was read but does not list the node.
	Condition     slurmstate.Condition
	NotResponding bool
	Reason        string
	Partitions    []string
	InSlurm       bool
	// Reservations are the names of those covering the node now.
	Reservations []string
	// Notes are the notes in force on the whole node.
	Notes []Note
	// Stale is set when the snapshot is missing (SnapshotAt zero) or
	// older than SnapshotAt + 3 × its interval.
	Stale      bool
	SnapshotAt time.Time
	// StaleAt is when the snapshot goes stale (SnapshotAt + 3 × its
	// interval); zero without a snapshot. Aged uses it.
	StaleAt time.Time
	GPUs    []GPU
	// Changes are its state changes in the last hour (a long-lived
	// Source's History), oldest first; shared, not to be changed.
	Changes []StateChange
}

// GPU is one cell of the board.
type GPU struct {
	Index int
	UUID  string
	Model string
	State State
	// Util, MemUsedMiB and MemTotalMiB are nil when not known.
	Util        *uint32
	MemUsedMiB  *uint64
	MemTotalMiB *uint64
	PowerMW     *uint32
	TempC       *uint32
	// IdleSince is when an allocated GPU went idle (the agent's word).
	IdleSince *time.Time
	Jobs      []record.LiveJob
	Procs     []record.LiveProc
	// Notes are the notes in force on this GPU alone.
	Notes []Note
	// Strip is its last hour (a long-lived Source's History); nil when
	// not kept.
	Strip *Strip
	// Slices are its MIG instances, in the snapshot's order; a GPU with
	// slices is allocated by slice, never whole (see buildNode).
	Slices []Slice
}

// Slice is one MIG instance of a GPU: the agent's snapshot lists it as a
// device of its own, with a "MIG-" UUID and its GPU's index.
type Slice struct {
	UUID string
	// Profile is the instance's profile (1g.10gb), from its name.
	Profile     string
	State       State
	Util        *uint32
	MemUsedMiB  *uint64
	MemTotalMiB *uint64
	IdleSince   *time.Time
	Jobs        []record.LiveJob
	Procs       []record.LiveProc
	Strip       *Strip
}

// Note is a note or booking in force on a node (GPU nil) or one GPU.
type Note struct {
	ID int64
	// Cluster is the ledger's cluster of the note; "" matches any (a
	// ledger of one cluster).
	Cluster string
	Node    string
	GPU     *int
	Until   time.Time
	Text    string
	Author  string
}

// Totals sum the board.
type Totals struct {
	// FreeGPUs is how many GPUs are free (IsFree), each counted once;
	// ReservedGPUs how many are reserved (free to a reservation's users
	// only, not counted free).
	FreeGPUs, ReservedGPUs int
	// Free is per model × partition, sorted; a node in two partitions
	// counts in both.
	Free []FreeCount
	// IdleAllocated is how many GPUs are allocated but idle.
	IdleAllocated int
	// Booked is how many otherwise free GPUs a note claims.
	Booked int
	// RunningJobs is how many distinct jobs hold GPUs on fresh nodes.
	RunningJobs int
	// StaleNodes is how many nodes have no fresh snapshot.
	StaleNodes int
	// FreeSlices counts the free MIG slices per model × profile ×
	// partition, sorted; nil on a board without slices. A GPU cut into
	// slices counts in none of the whole-GPU sums above.
	FreeSlices []SliceCount
}

// SliceCount is the free MIG slices of one profile of a model in one
// partition, and the nodes that have them.
type SliceCount struct {
	Model, Profile, Partition string
	Free                      int
	Nodes                     []NodeCount
}

// FreeCount is the free GPUs of one model in one partition.
type FreeCount struct {
	Model     string
	Partition string
	// Free counts the free GPUs (IsFree); Reserved those on reserved
	// nodes, free only to the reservation's users and not in Free.
	Free     int
	Reserved int
	// Nodes names the nodes with free or reserved GPUs and how many each.
	Nodes []NodeCount
}

// NodeCount is a node and its free (and reserved) GPUs.
type NodeCount struct {
	Node     string `json:"node"`
	Count    int    `json:"free"`
	Reserved int    `json:"reserved,omitempty"`
}

// String is n as a list of nodes shows it: gpu01(2), its reserved GPUs
// named apart, gpu03(1 reserved), gpu05(2+1 reserved).
func (n NodeCount) String() string {
	switch {
	case n.Reserved == 0:
		return fmt.Sprintf("%s(%d)", n.Node, n.Count)
	case n.Count == 0:
		return fmt.Sprintf("%s(%d reserved)", n.Node, n.Reserved)
	}
	return fmt.Sprintf("%s(%d+%d reserved)", n.Node, n.Count, n.Reserved)
}

// Build joins the snapshots with Slurm's view (nil: not had) and the
// notes in force at now, for a ledger of one cluster: a node Slurm lists
// without a snapshot is of no known cluster and takes any cluster's notes.
// A board of a ledger shared by clusters is built by BuildCluster.
func Build(lives []record.Live, slurm *slurmstate.State, notes []Note, now time.Time) Board {
	return BuildCluster("", lives, slurm, notes, now)
}

// BuildCluster is Build for the board of cluster (config cluster.name,
// which the agents stamp on their snapshots): a node Slurm lists without a
// snapshot is of cluster, so another cluster's notes neither attach to
// it nor become problems of this board.
func BuildCluster(cluster string, lives []record.Live, slurm *slurmstate.State, notes []Note, now time.Time) Board {
	b := Board{At: now, Slurm: slurm != nil}
	byNode := map[string]*slurmstate.Node{}
	if slurm != nil {
		b.SlurmAt = slurm.At
		for i := range slurm.Nodes {
			byNode[slurm.Nodes[i].Name] = &slurm.Nodes[i]
		}
	}
	seen := map[string]bool{}
	for i := range lives {
		l := &lives[i]
		if seen[l.Node] {
			continue // Load gives one per node; a caller's duplicate adds nothing
		}
		seen[l.Node] = true
		b.Nodes = append(b.Nodes, buildNode(l, byNode[l.Node], slurm, notesOf(notes, l.Node, l.Cluster), now))
	}
	if slurm != nil {
		for i := range slurm.Nodes {
			sn := &slurm.Nodes[i]
			if sn.GPUCount == 0 || seen[sn.Name] {
				continue
			}
			seen[sn.Name] = true
			n := buildNode(nil, sn, slurm, notesOf(notes, sn.Name, cluster), now)
			n.Cluster = cluster
			b.Nodes = append(b.Nodes, n)
		}
	}
	sort.Slice(b.Nodes, func(i, j int) bool { return b.Nodes[i].Name < b.Nodes[j].Name })
	b.Totals = totals(b.Nodes)
	b.NoteProblems = unshown(cluster, b.Nodes, notes)
	return b
}

// notesOf returns the notes on node of cluster; a note without a cluster
// is on any cluster's node of that name, and a node whose cluster is not
// known (no snapshot) takes any cluster's.
func notesOf(notes []Note, node, cluster string) []Note {
	var out []Note
	for _, n := range notes {
		if n.Node == node && sameCluster(n.Cluster, cluster) {
			out = append(out, n)
		}
	}
	return out
}

func sameCluster(a, b string) bool { return a == "" || b == "" || a == b }

// unshown are the notes no cell or node of nodes shows, as problems, so
// a booking on a mistyped node or GPU is not dropped silently. A note of
// the board's own cluster is always this board's to show: one whose
// cluster no node here is of (a cluster.name that is not the agents')
// is a problem, not another board's.
func unshown(cluster string, nodes []Node, notes []Note) []Problem {
	clusters := map[string]bool{}
	for _, n := range nodes {
		clusters[n.Cluster] = true
	}
	var out []Problem
	for _, nt := range notes {
		if nt.Cluster != "" && nt.Cluster != cluster && !clusters[nt.Cluster] && !clusters[""] {
			continue // another cluster's board shows it
		}
		where := nt.Node
		if nt.GPU != nil {
			where = fmt.Sprintf("%s:%d", nt.Node, *nt.GPU)
		}
		var node *Node
		for i := range nodes {
			if nodes[i].Name == nt.Node && sameCluster(nt.Cluster, nodes[i].Cluster) {
				node = &nodes[i]
				break
			}
		}
		switch {
		case node == nil:
			out = append(out, Problem{Err: fmt.Sprintf("note %d on %s: no such node on the board", nt.ID, where)})
		case nt.GPU != nil && !hasGPU(*node, *nt.GPU):
			out = append(out, Problem{Err: fmt.Sprintf("note %d on %s: no such GPU on the board", nt.ID, where)})
		}
	}
	return out
}

func hasGPU(n Node, index int) bool {
	for _, g := range n.GPUs {
		if g.Index == index {
			return true
		}
	}
	return false
}

func buildNode(l *record.Live, sn *slurmstate.Node, slurm *slurmstate.State, notes []Note, now time.Time) Node {
	n := Node{}
	for _, nt := range notes {
		if nt.GPU == nil {
			n.Notes = append(n.Notes, nt)
		}
	}
	if l != nil {
		n.Name, n.Cluster, n.SnapshotAt = l.Node, l.Cluster, l.Time
		iv := time.Duration(l.Interval * float64(time.Second))
		n.StaleAt = l.Time.Add(StaleAfter * iv)
		n.Stale = now.After(n.StaleAt)
	} else {
		n.Name, n.Stale = sn.Name, true
	}
	if sn != nil {
		n.InSlurm = true
		n.Condition, n.NotResponding, n.Reason = sn.Condition, sn.NotResponding, sn.Reason
		n.Partitions = append([]string(nil), sn.Partitions...)
	}
	if slurm != nil {
		for _, r := range slurm.Reservations {
			if covers(r, n.Name, now) {
				n.Reservations = append(n.Reservations, r.Name)
			}
		}
	}
	if l == nil {
		// Slurm's count stands in for the GPUs no snapshot describes.
		for _, g := range sn.GPUs {
			for range g.Count {
				n.GPUs = append(n.GPUs, GPU{Index: len(n.GPUs), Model: g.Type, State: Stale, Notes: gpuNotes(notes, len(n.GPUs))})
			}
		}
		return n
	}
	var insts []record.LiveGPU
	for _, lg := range l.GPUs {
		if isSlice(lg) {
			insts = append(insts, lg)
			continue
		}
		n.GPUs = append(n.GPUs, wholeGPU(&n, slurm != nil, lg, notes))
	}
	for _, lg := range insts {
		nest(&n, slurm != nil, lg, notes)
	}
	if sn != nil && sn.GPUCount > 0 {
		capUnheld(units(n.GPUs), sn.GPUCount-sn.GPUsUsed)
	}
	for i := range n.GPUs {
		if len(n.GPUs[i].Slices) > 0 {
			n.GPUs[i].State = parentState(n.GPUs[i])
		}
	}
	return n
}

// isSlice says whether a snapshot's device is a MIG instance: NVML's
// MIG UUIDs begin "MIG-", and the agent gives an instance its GPU's index.
func isSlice(g record.LiveGPU) bool { return strings.HasPrefix(g.UUID, "MIG-") }

// migProfile is a MIG instance's profile from its NVML name ("" when
// the name says none).
func migProfile(name string) string {
	p, _ := record.MIGProfileName(name)
	return p
}

// wholeGPU is the snapshot's device lg as a cell of its own on n, with
// the notes on its index.
func wholeGPU(n *Node, haveSlurm bool, lg record.LiveGPU, notes []Note) GPU {
	g := GPU{Index: lg.Index, UUID: lg.UUID, Model: lg.Model, Util: lg.Util, MemUsedMiB: lg.MemUsedMiB,
		MemTotalMiB: lg.MemTotalMiB, PowerMW: lg.PowerMW, TempC: lg.TempC, IdleSince: lg.IdleSince,
		Jobs: lg.Jobs, Procs: lg.Procs, Notes: gpuNotes(notes, lg.Index)}
	g.State = gpuState(*n, haveSlurm, lg, len(n.Notes)+len(g.Notes) > 0)
	return g
}

// nest puts a MIG instance under the GPU of its index; one whose GPU is
// not in the snapshot is shown as a GPU of its own, as before slices.
func nest(n *Node, haveSlurm bool, lg record.LiveGPU, notes []Note) {
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if g.Index != lg.Index || isSlice(record.LiveGPU{UUID: g.UUID}) {
			continue
		}
		s := Slice{UUID: lg.UUID, Profile: migProfile(lg.Model), Util: lg.Util, MemUsedMiB: lg.MemUsedMiB,
			MemTotalMiB: lg.MemTotalMiB, IdleSince: lg.IdleSince, Jobs: lg.Jobs, Procs: lg.Procs}
		s.State = gpuState(*n, haveSlurm, lg, len(n.Notes)+len(g.Notes) > 0)
		g.Slices = append(g.Slices, s)
		return
	}
	n.GPUs = append(n.GPUs, wholeGPU(n, haveSlurm, lg, notes))
}

// parentState is a GPU cut into slices as its cell shows it: what its
// slices do (a foreign process, then work, then idleness, first), else
// its own state (the node's condition, a booking, free).
func parentState(g GPU) State {
	for _, s := range []State{Foreign, Busy, Idle} {
		for _, sl := range g.Slices {
			if sl.State == s && (g.State == Free || g.State == Booked || g.State == Reserved || g.State == Busy || g.State == Idle) {
				return s
			}
		}
	}
	return g.State
}

// units are the states of what Slurm allocates on a node, one gres
// each: a whole GPU, or each slice of a GPU cut into slices.
func units(gpus []GPU) []*State {
	var out []*State
	for i := range gpus {
		if len(gpus[i].Slices) == 0 {
			out = append(out, &gpus[i].State)
			continue
		}
		for j := range gpus[i].Slices {
			out = append(out, &gpus[i].Slices[j].State)
		}
	}
	return out
}

// capUnheld leaves at most room GPUs (or slices) free, reserved or
// booked: Slurm counts GPUsUsed of GPUCount held, and a job it has just
// started may not be in the snapshot yet. Which it took is not known;
// the highest indexes are called busy, so the free count is right.
func capUnheld(states []*State, room int) {
	for _, st := range states {
		switch *st {
		case Free, Reserved, Booked:
			if room > 0 {
				room--
				continue
			}
		default:
			continue
		}
		*st = Busy
	}
}

// gpuNotes returns the notes on GPU index alone.
func gpuNotes(notes []Note, index int) []Note {
	var out []Note
	for _, n := range notes {
		if n.GPU != nil && *n.GPU == index {
			out = append(out, n)
		}
	}
	return out
}

// covers says whether reservation r holds node now (a zero start or end
// is open).
func covers(r slurmstate.Reservation, node string, now time.Time) bool {
	if (!r.Start.IsZero() && now.Before(r.Start)) || (!r.End.IsZero() && !now.Before(r.End)) {
		return false
	}
	for _, x := range r.Nodes {
		if x == node {
			return true
		}
	}
	return false
}

// Schedulable says whether Slurm gives a node's unheld GPUs to jobs in
// condition c. ALLOCATED is not: every CPU is taken (by CPU-only jobs,
// perhaps), so a GPU job would pend.
func Schedulable(c slurmstate.Condition) bool {
	return c == slurmstate.Idle || c == slurmstate.Mixed
}

func gpuState(n Node, haveSlurm bool, g record.LiveGPU, noted bool) State {
	switch {
	case n.Stale:
		return Stale
	case haveSlurm && (!n.InSlurm || n.Condition == slurmstate.Down || n.NotResponding):
		return Down
	case foreign(g):
		return Foreign
	case len(g.Jobs) > 0:
		// The agent's word first, so the board and check's idle alerts
		// agree; an unknown utilization is not called idle: idle is a claim.
		if g.IdleSince != nil || (g.Util != nil && *g.Util < IdleUtil) {
			return Idle
		}
		return Busy
	case haveSlurm && (n.Condition == slurmstate.Drained || n.Condition == slurmstate.Draining):
		return Drained
	case haveSlurm && n.Condition == slurmstate.Allocated:
		return Busy
	case haveSlurm && !Schedulable(n.Condition):
		return Down
	case noted:
		return Booked
	case len(n.Reservations) > 0:
		return Reserved
	}
	return Free
}

// foreign: a process the agent marked, one whose job does not hold the
// GPU, or any process on a GPU no job holds. Job 0 unmarked is a process
// whose cgroup the agent could not read: its owner is unknown, not foreign.
func foreign(g record.LiveGPU) bool {
	if len(g.Procs) > 0 && len(g.Jobs) == 0 {
		return true
	}
	for _, p := range g.Procs {
		if p.Foreign || (p.Job != 0 && !holds(g.Jobs, p.Job)) {
			return true
		}
	}
	return false
}

func holds(jobs []record.LiveJob, job uint64) bool {
	for _, j := range jobs {
		if j.Job == job {
			return true
		}
	}
	return false
}

func totals(nodes []Node) Totals {
	var t Totals
	type key struct{ model, part string }
	free := map[key]*FreeCount{}
	type jobKey struct {
		cluster string
		job     uint64
	}
	jobs := map[jobKey]bool{}
	var migFree map[sliceKey]*SliceCount
	for _, n := range nodes {
		if n.Stale {
			t.StaleNodes++
			continue
		}
		parts := n.Partitions
		if len(parts) == 0 {
			parts = []string{""}
		}
		perModel := map[string][2]int{} // free, reserved
		for _, g := range n.GPUs {
			for _, j := range g.Jobs {
				jobs[jobKey{n.Cluster, j.Job}] = true
			}
			if len(g.Slices) > 0 {
				for _, sl := range g.Slices {
					for _, j := range sl.Jobs {
						jobs[jobKey{n.Cluster, j.Job}] = true
					}
				}
				migFree = countSlices(migFree, n, parts, g)
				continue
			}
			c := perModel[g.Model]
			switch {
			case IsFree(g.State):
				t.FreeGPUs++
				c[0]++
			case g.State == Reserved:
				t.ReservedGPUs++
				c[1]++
			case g.State == Idle:
				t.IdleAllocated++
			case g.State == Booked:
				t.Booked++
			}
			if c != ([2]int{}) {
				perModel[g.Model] = c
			}
		}
		for model, c := range perModel {
			for _, p := range parts {
				k := key{model, p}
				fc := free[k]
				if fc == nil {
					fc = &FreeCount{Model: model, Partition: p}
					free[k] = fc
				}
				fc.Free += c[0]
				fc.Reserved += c[1]
				fc.Nodes = append(fc.Nodes, NodeCount{Node: n.Name, Count: c[0], Reserved: c[1]})
			}
		}
	}
	t.RunningJobs = len(jobs)
	t.FreeSlices = sortSlices(migFree)
	for _, fc := range free {
		t.Free = append(t.Free, *fc)
	}
	slices.SortFunc(t.Free, func(a, b FreeCount) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Partition, b.Partition))
	})
	return t
}

type sliceKey struct{ model, profile, part string }

// countSlices adds the free slices of g, on n in parts, to m (made when
// nil).
func countSlices(m map[sliceKey]*SliceCount, n Node, parts []string, g GPU) map[sliceKey]*SliceCount {
	free := map[string]int{}
	var order []string
	for _, sl := range g.Slices {
		if !IsFree(sl.State) {
			continue
		}
		if free[sl.Profile] == 0 {
			order = append(order, sl.Profile)
		}
		free[sl.Profile]++
	}
	if m == nil {
		m = map[sliceKey]*SliceCount{}
	}
	for _, prof := range order {
		for _, p := range parts {
			k := sliceKey{g.Model, prof, p}
			sc := m[k]
			if sc == nil {
				sc = &SliceCount{Model: g.Model, Profile: prof, Partition: p}
				m[k] = sc
			}
			sc.Free += free[prof]
			if l := len(sc.Nodes); l > 0 && sc.Nodes[l-1].Node == n.Name {
				sc.Nodes[l-1].Count += free[prof]
			} else {
				sc.Nodes = append(sc.Nodes, NodeCount{Node: n.Name, Count: free[prof]})
			}
		}
	}
	return m
}

func sortSlices(m map[sliceKey]*SliceCount) []SliceCount {
	var out []SliceCount
	for _, sc := range m {
		out = append(out, *sc)
	}
	slices.SortFunc(out, func(a, b SliceCount) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Profile, b.Profile), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Aged is b as known at now, later than b.At, when no newer board could
// be built (a hung live directory): the nodes whose snapshots have gone
// stale since are stale, their GPUs with them, and the totals follow, so
// a board that cannot be rebuilt never goes on showing a silent node
// fresh. b is shared and left as it is.
func (b Board) Aged(now time.Time) Board {
	if !now.After(b.At) {
		return b
	}
	b.At = now
	nodes := make([]Node, len(b.Nodes))
	copy(nodes, b.Nodes)
	for i := range nodes {
		n := &nodes[i]
		if n.Stale || n.StaleAt.IsZero() || !now.After(n.StaleAt) {
			continue
		}
		n.Stale = true
		gpus := make([]GPU, len(n.GPUs))
		copy(gpus, n.GPUs)
		for j := range gpus {
			gpus[j].State = Stale
			if len(gpus[j].Slices) > 0 {
				sl := make([]Slice, len(gpus[j].Slices))
				copy(sl, gpus[j].Slices)
				for k := range sl {
					sl[k].State = Stale
				}
				gpus[j].Slices = sl
			}
		}
		n.GPUs = gpus
	}
	b.Nodes = nodes
	b.Totals = totals(nodes)
	return b
}

// Find returns the node named name.
func (b *Board) Find(name string) (*Node, error) {
	for i := range b.Nodes {
		if b.Nodes[i].Name == name {
			return &b.Nodes[i], nil
		}
	}
	return nil, fmt.Errorf("node %q is not on the board: no live snapshot and not a GPU node in Slurm", name)
}
