package board

import (
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// The last hour of each GPU and node, kept by a long-lived Source from the
// snapshots it reads anyway (no NVML work of its own): per GPU a ring of
// StripMinutes one-minute buckets (mean utilization, the job that held
// it), per node its state changes. A strip shows whole minutes only, so a
// GPU's strip, and the board's row that shows it, changes once a minute.

// StripMinutes is how many minutes a strip shows.
const StripMinutes = 60

// maxNodeChanges bounds the state changes kept per node.
const maxNodeChanges = 16

// Minute is one minute of a GPU's strip.
type Minute struct {
	// Seen: a snapshot of the GPU fell in the minute; without one the
	// minute is a gap, neither idle nor busy.
	Seen bool
	// Util is the mean utilization of the minute's snapshots that gave
	// one (percent); UtilKnown is false when none did.
	Util      uint8
	UtilKnown bool
	// Job is the job that held the GPU in the minute (the first seen; 0:
	// none), User its user; MoreJobs: another held it too in the minute.
	Job      uint64
	User     string
	MoreJobs bool
}

// Strip is a GPU's last StripMinutes whole minutes, oldest first; End is
// the end of the last one (a minute boundary).
type Strip struct {
	End     time.Time
	Minutes [StripMinutes]Minute
}

// StateChange is a node's state (its Slurm condition, "stale" or
// "unknown") changing at At.
type StateChange struct {
	At       time.Time
	From, To string
}

// bucket is one minute of a ring: min is its Unix minute, 0 when unused.
type bucket struct {
	min         int64
	utilSum     uint32
	utilN, seen uint16
	job         uint64
	user        string
	moreJobs    bool
}

type ring struct {
	b [StripMinutes]bucket
	// last is the newest snapshot time taken: a snapshot read again (every
	// build reads every file) is counted once.
	last time.Time
	// strip is the strip made for the minute ending at stripEnd, shared
	// with every board built in that minute; dirty is set when a minute
	// it shows has changed since.
	strip *Strip
	dirty bool
	any   bool // strip has a minute seen
}

// add counts one snapshot of the GPU taken at t.
func (r *ring) add(t time.Time, util *uint32, jobs []record.LiveJob) {
	if !t.After(r.last) {
		return
	}
	r.last = t
	m := t.Unix() / 60
	b := &r.b[m%StripMinutes]
	if b.min != m {
		*b = bucket{min: m}
	}
	if b.seen < ^uint16(0) {
		b.seen++
	}
	if util != nil && b.utilN < ^uint16(0) {
		b.utilSum += min(*util, 100)
		b.utilN++
	}
	for _, j := range jobs {
		switch {
		case b.job == 0:
			b.job, b.user = j.Job, j.User
		case b.job != j.Job:
			b.moreJobs = true
		}
	}
	if r.strip != nil && m < r.strip.End.Unix()/60 {
		r.dirty = true // a late snapshot in a minute the strip shows
	}
}

// stripAt is the ring's strip of the whole minutes before now's minute,
// made at most once per minute (and again after a late snapshot).
func (r *ring) stripAt(now time.Time) *Strip {
	end := now.Truncate(time.Minute)
	if r.strip != nil && r.strip.End.Equal(end) && !r.dirty {
		return r.shown()
	}
	s := &Strip{End: end}
	r.any = false
	last := end.Unix()/60 - 1
	for i := range StripMinutes {
		m := last - int64(StripMinutes-1-i)
		b := &r.b[((m%StripMinutes)+StripMinutes)%StripMinutes]
		if b.min != m || b.seen == 0 {
			continue
		}
		mi := Minute{Seen: true, Job: b.job, User: b.user, MoreJobs: b.moreJobs}
		if b.utilN > 0 {
			mi.Util, mi.UtilKnown = uint8((b.utilSum+uint32(b.utilN)/2)/uint32(b.utilN)), true
		}
		s.Minutes[i] = mi
		r.any = true
	}
	r.strip, r.dirty = s, false
	return r.shown()
}

// shown is the strip made, or nil when it has not a minute seen: a GPU
// first seen this minute has no last hour to show yet.
func (r *ring) shown() *Strip {
	if !r.any {
		return nil
	}
	return r.strip
}

// nodeLog is a node's last state and its changes within the hour.
type nodeLog struct {
	state   string
	seen    time.Time
	changes []StateChange
}

// gpuKey names a GPU across boards: by UUID when known (a MIG slice has
// its own), else by index.
type gpuKey struct {
	cluster, node, uuid string
	index               int
}

type nodeKey struct{ cluster, node string }

// History is the last hour of the board's GPUs and nodes. It is bounded:
// a GPU or node not seen for an hour is forgotten, and the board reads at
// most Limits.MaxFiles snapshots.
type History struct {
	mu    sync.Mutex
	gpus  map[gpuKey]*ring
	nodes map[nodeKey]*nodeLog
	swept time.Time
}

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{gpus: map[gpuKey]*ring{}, nodes: map[nodeKey]*nodeLog{}}
}

func keyOf(cluster, node string, g record.LiveGPU) gpuKey {
	if g.UUID != "" {
		return gpuKey{cluster: cluster, node: node, uuid: g.UUID}
	}
	return gpuKey{cluster: cluster, node: node, index: g.Index}
}

// Point is one past reading of a GPU, from the ledger's samples: what
// fills the strips after a restart.
type Point struct {
	Cluster, Node, UUID string
	Index               int
	At                  time.Time
	Util                *uint32
	Job                 uint64
	User                string
}

// Fill adds past readings (a restart's last hour from the ledger), in
// time order per GPU; readings older than what a GPU holds are skipped.
func (h *History) Fill(points []Point) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range points {
		k := keyOf(p.Cluster, p.Node, record.LiveGPU{UUID: p.UUID, Index: p.Index})
		r := h.ring(k)
		var jobs []record.LiveJob
		if p.Job != 0 {
			jobs = []record.LiveJob{{Job: p.Job, User: p.User}}
		}
		r.add(p.At, p.Util, jobs)
	}
}

func (h *History) ring(k gpuKey) *ring {
	r := h.gpus[k]
	if r == nil {
		r = &ring{}
		h.gpus[k] = r
	}
	return r
}

// observe adds the snapshots read for a board and sets each GPU's strip
// (slices too) and each node's state changes on b, built from them at now.
func (h *History) observe(lives []record.Live, b *Board, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range lives {
		l := &lives[i]
		for _, g := range l.GPUs {
			h.ring(keyOf(l.Cluster, l.Node, g)).add(l.Time, g.Util, g.Jobs)
		}
	}
	for i := range b.Nodes {
		n := &b.Nodes[i]
		h.nodeState(n, now)
		for j := range n.GPUs {
			g := &n.GPUs[j]
			g.Strip = h.stripOf(n, g.UUID, g.Index, now)
			for k := range g.Slices {
				g.Slices[k].Strip = h.stripOf(n, g.Slices[k].UUID, g.Index, now)
			}
		}
	}
	h.sweep(now)
}

func (h *History) stripOf(n *Node, uuid string, index int, now time.Time) *Strip {
	r := h.gpus[keyOf(n.Cluster, n.Name, record.LiveGPU{UUID: uuid, Index: index})]
	if r == nil {
		return nil
	}
	return r.stripAt(now)
}

// nodeState records n's state at now if it changed, and sets n.Changes
// to those of the last hour.
func (h *History) nodeState(n *Node, now time.Time) {
	k := nodeKey{n.Cluster, n.Name}
	st := nodeStateOf(n)
	lg := h.nodes[k]
	if lg == nil {
		lg = &nodeLog{state: st}
		h.nodes[k] = lg
	}
	lg.seen = now
	if lg.state != st {
		lg.changes = append(lg.changes, StateChange{At: now, From: lg.state, To: st})
		lg.state = st
	}
	cut := now.Add(-StripMinutes * time.Minute)
	drop := 0
	for drop < len(lg.changes) && (lg.changes[drop].At.Before(cut) || len(lg.changes)-drop > maxNodeChanges) {
		drop++
	}
	if drop > 0 {
		lg.changes = append([]StateChange(nil), lg.changes[drop:]...)
	}
	n.Changes = lg.changes[:len(lg.changes):len(lg.changes)]
}

func nodeStateOf(n *Node) string {
	switch {
	case n.Stale:
		return "stale"
	case !n.InSlurm:
		return "unknown"
	case n.NotResponding:
		return string(n.Condition) + " (not responding)"
	}
	return string(n.Condition)
}

// sweep forgets, once a minute, the GPUs and nodes not seen for an hour.
func (h *History) sweep(now time.Time) {
	if now.Sub(h.swept) < time.Minute {
		return
	}
	h.swept = now
	cut := now.Add(-StripMinutes * time.Minute)
	for k, r := range h.gpus {
		if r.last.Before(cut) {
			delete(h.gpus, k)
		}
	}
	for k, lg := range h.nodes {
		if lg.seen.Before(cut) {
			delete(h.nodes, k)
		}
	}
}
