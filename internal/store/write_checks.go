package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// What one GPU can physically do (invariant 8). Generous on purpose: the
// largest GPUs draw about 1.2 kW, and these bounds are there to refuse
// forged or garbage values, not to police a real card.
const (
	// MaxGPUPowerMW is the highest power one GPU is believed: 2 kW.
	MaxGPUPowerMW = 2_000_000
	// energySlackMJ allows for the counter's own granularity and the
	// sample time's jitter: 2 kW for one more second.
	energySlackMJ = MaxGPUPowerMW / 1000 * 1000
)

// Rejected is a record its node may not say (invariant 8): the file is
// quarantined with Reason and none of it is applied. Wait is set when a
// later pass may accept it: it names a job that has no event from its
// node yet.
type Rejected struct {
	Reason string
	Wait   bool
}

func (r *Rejected) Error() string { return r.Reason }

func reject(format string, args ...any) error {
	return &Rejected{Reason: fmt.Sprintf(format, args...)}
}

// gpuOwner checks that a GPU UUID is this node's or not yet known: a UUID
// that another node already reported is never moved (a GPU moved between
// servers must be removed from the gpus table by an admin first).
func (b *Batch) gpuOwner(uuid string, node int64, nodeName string) error {
	if g, ok := b.gpus[uuid]; ok {
		if g.node == node {
			return nil
		}
	}
	row, err := b.queryRow(`SELECT g.node_id, n.name FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?`, uuid)
	if err != nil {
		return err
	}
	var owner int64
	var name string
	switch err := row.Scan(&owner, &name); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("owner of gpu %s: %w", uuid, err)
	}
	if owner != node {
		return reject("GPU %s belongs to node %s, not %s: a node may speak only of its own GPUs", uuid, name, nodeName)
	}
	return nil
}

// alloc is a job's allocation on one node in Unix ms, [lo, hi); lo is
// math.MinInt64 when the start is only estimated (no start event yet), hi
// math.MaxInt64 while it runs. From jobAlloc it is the window the job's
// samples on the node are counted against: the one its first counted
// sample found (job_nodes.s_lo, s_hi), which follows the allocation when
// a reroll counts the samples again (recount).
type alloc struct {
	lo, hi int64
	row    int64 // jobs.id
	unset  bool  // no sample counted yet: the allocation now, to be kept
}

// sampleWindow is the allocation samples are cut to, from a job_nodes
// row's start, start_estimated and end.
func sampleWindow(start, end sql.NullInt64, est bool) alloc {
	a := alloc{lo: math.MinInt64, hi: math.MaxInt64}
	if start.Valid && !est {
		a.lo = start.Int64 * 1000
	}
	if end.Valid {
		a.hi = end.Int64 * 1000
	}
	return a
}

// jobAlloc is the window a job run's samples on node are counted against;
// a job with no event from the node is a Rejected with Wait.
func (b *Batch) jobAlloc(cluster string, job uint64, restart int, node int64, nodeName string) (alloc, error) {
	k := allocKey{jobKey{cluster, job, restart}, node}
	if a, ok := b.allocs[k]; ok {
		return a, nil
	}
	// The job's dimensions come along, for flushUse's rollups of the
	// samples (jobDims): on PostgreSQL a read of their own was a round
	// trip for every job whose samples a batch counted.
	row, err := b.queryRow(`SELECT n.job, n.start, n.end, n.start_estimated, n.s_lo, n.s_hi, j.cluster, j.user, j.account, j.partition, j.ignored
 FROM jobs j JOIN job_nodes n ON n.job = j.id
 WHERE j.cluster = ? AND j.job_id = ? AND j.restart = ? AND n.node_id = ?`, cluster, int64(job), restart, node)
	if err != nil {
		return alloc{}, err
	}
	var start, end, slo, shi sql.NullInt64
	var est bool
	var c alloc
	var d Dims
	switch err := row.Scan(&c.row, &start, &end, &est, &slo, &shi, &d.Cluster, &d.User, &d.Account, &d.Partition, &d.Ignored); {
	case errors.Is(err, sql.ErrNoRows):
		return alloc{}, &Rejected{Wait: true, Reason: fmt.Sprintf("job %d (restart %d) has no start or end event from node %s", job, restart, nodeName)}
	case err != nil:
		return alloc{}, fmt.Errorf("allocation of job %d on %s: %w", job, nodeName, err)
	}
	if slo.Valid && shi.Valid {
		c.lo, c.hi = slo.Int64, shi.Int64
	} else {
		w := sampleWindow(start, end, est)
		c.lo, c.hi, c.unset = w.lo, w.hi, true
	}
	if b.allocs == nil {
		b.allocs = map[allocKey]alloc{}
	}
	b.allocs[k] = c
	// the job's row id came with it: Job need not ask for it again
	b.knowJob(k.job, c.row, d)
	return c, nil
}

// keepCounted records the window a job's first counted samples on node
// were cut to (see counted).
func (b *Batch) keepCounted(k jobKey, node int64, c alloc) error {
	if !c.unset {
		return nil
	}
	if _, err := b.exec(`UPDATE job_nodes SET s_lo = ?, s_hi = ? WHERE job = ? AND node_id = ? AND s_lo IS NULL`, c.lo, c.hi, c.row, node); err != nil {
		return err
	}
	c.unset = false
	b.allocs[allocKey{k, node}] = c
	return nil
}

// allocKey keys the batch's cache of allocations (Batch.allocs), which
// every change of job_nodes clears.
type allocKey struct {
	job  jobKey
	node int64
}

// checkEvent refuses an event that contradicts its node's other event of
// the same job (an end before the start) or names another node's GPU.
func (b *Batch) checkEvent(ev *record.Event, node int64) error {
	for _, g := range ev.GPUs {
		if g.UUID != "" {
			if err := b.gpuOwner(g.UUID, node, ev.Node); err != nil {
				return err
			}
		}
	}
	n, err := b.eventNode(ev, node)
	if err != nil {
		return err
	}
	t := ev.Time.Unix()
	switch ev.Kind {
	case record.JobEnd:
		if n.start.Valid && !n.est && t < n.start.Int64 {
			return reject("job %d (restart %d) ends at %s, before its start at %s on node %s", ev.Job.ID, ev.Job.RestartCount,
				fmtUnix(t), fmtUnix(n.start.Int64), ev.Node)
		}
	case record.JobStart:
		if n.end.Valid && n.src == "epilog" && t > n.end.Int64 {
			return reject("job %d (restart %d) starts at %s, after its end at %s on node %s", ev.Job.ID, ev.Job.RestartCount,
				fmtUnix(t), fmtUnix(n.end.Int64), ev.Node)
		}
	}
	return nil
}

// eventNodeRow is what checkEvent reads of an event's job on its node:
// nothing (all NULL) when the job or its node's row is not stored yet.
type eventNodeRow struct {
	start, end sql.NullInt64
	est        bool
	src        string
}

// eventNode reads the event's job's row on its node. On PostgreSQL, where
// each read is a round trip, the job's own row comes along and its id and
// dimensions are kept for the event's writes (Job, jobDims), which then
// ask for neither; on SQLite that join cost three times the two lookups,
// which are in-process reads there. The node's row is found by the job's
// id as a subquery: PostgreSQL then reads job_nodes by its whole key
// (job, node_id) whatever its statistics say; joined by j.id, a plan made
// while the tables were empty read the key by node_id alone.
func (b *Batch) eventNode(ev *record.Event, node int64) (eventNodeRow, error) {
	k := jobKey{ev.Cluster, ev.Job.ID, ev.Job.RestartCount}
	var n eventNodeRow
	if !b.postgres() {
		row, err := b.queryRow(`SELECT n.start, n.start_estimated, n.end, coalesce(n.end_source, '') FROM job_nodes n
 WHERE n.job = (SELECT id FROM jobs WHERE cluster = ? AND job_id = ? AND restart = ?) AND n.node_id = ?`, k.cluster, int64(k.job), k.restart, node)
		if err != nil {
			return n, err
		}
		switch err := row.Scan(&n.start, &n.est, &n.end, &n.src); {
		case errors.Is(err, sql.ErrNoRows):
			return eventNodeRow{}, nil
		case err != nil:
			return n, fmt.Errorf("job %d on %s: %w", ev.Job.ID, ev.Node, err)
		}
		return n, nil
	}
	row, err := b.queryRow(`SELECT j.id, j.cluster, j.user, j.account, j.partition, j.ignored, j.sacct_checked,
 n.start, coalesce(n.start_estimated, 0), n.end, coalesce(n.end_source, '') FROM jobs j
 LEFT JOIN job_nodes n ON n.job = (SELECT id FROM jobs WHERE cluster = ? AND job_id = ? AND restart = ?) AND n.node_id = ?
 WHERE j.cluster = ? AND j.job_id = ? AND j.restart = ?`,
		k.cluster, int64(k.job), k.restart, node, k.cluster, int64(k.job), k.restart)
	if err != nil {
		return n, err
	}
	var id, checked int64
	var d Dims
	switch err := row.Scan(&id, &d.Cluster, &d.User, &d.Account, &d.Partition, &d.Ignored, &checked, &n.start, &n.est, &n.end, &n.src); {
	case errors.Is(err, sql.ErrNoRows):
		return eventNodeRow{}, nil
	case err != nil:
		return n, fmt.Errorf("job %d on %s: %w", ev.Job.ID, ev.Node, err)
	}
	b.knowJob(k, id, d)
	if checked == 0 {
		b.unchecked[id] = true
	}
	return n, nil
}

func fmtUnix(t int64) string { return time.Unix(t, 0).UTC().Format(time.RFC3339) }

// CheckJobGPU refuses an aggregate of another node's GPU or of a job the
// node has no event of (yet). It writes nothing but the node's row.
func (b *Batch) CheckJobGPU(a *record.JobGPU) error {
	node, err := b.Node(a.Cluster, a.Node)
	if err != nil {
		return err
	}
	return b.checkJobGPU(a, node)
}

func (b *Batch) checkJobGPU(a *record.JobGPU, node int64) error {
	if err := b.gpuOwner(a.UUID, node, a.Node); err != nil {
		return err
	}
	_, err := b.jobAlloc(a.Cluster, a.Job, a.RestartCount, node, a.Node)
	return err
}

// window is the part of time a sample stands for, [lo, hi) in Unix ms.
type window struct{ lo, hi int64 }

// segmentCheck is what checkSegment learned for the writer: each sample's
// window, and the allocation of every job the segment names.
type segmentCheck struct {
	win   []window
	alloc map[jobKey]alloc
	// next is the stored sample right after a file's sample (sample -1),
	// if any: its energy delta is taken again against the new reading.
	// prevStored is
	// the time of the stored sample right before it, 0 if none.
	next       []stamp
	prevStored []int64
}

// minGapFraction: two samples of one GPU closer than this fraction of the
// earlier one's interval overlap, and the file is refused. Closer than a
// whole interval (a late tick) only trims the windows, so that they never
// overlap and no GPU-second is counted twice.
const minGapFraction = 0.5

type stamp struct {
	t, iv  int64 // ms
	mj     *uint64
	sample int // index in the file, -1 for a stored sample
}

// checkSegment holds a segment to what its node may say: its own GPUs,
// jobs it has events of, no sample of a GPU overlapping another, energy
// a GPU can draw. It writes nothing.
func (b *Batch) checkSegment(h *record.SegmentHeader, node int64, samples []record.Sample) (*segmentCheck, error) {
	ivMS := int64(h.Interval*1000 + 0.5)
	c := &segmentCheck{win: make([]window, len(samples)), alloc: map[jobKey]alloc{},
		next: make([]stamp, len(samples)), prevStored: make([]int64, len(samples))}
	byGPU := map[string][]stamp{}
	var uuids []string
	for i := range samples {
		s := &samples[i]
		if _, ok := byGPU[s.UUID]; !ok {
			if err := b.gpuOwner(s.UUID, node, h.Node); err != nil {
				return nil, err
			}
			uuids = append(uuids, s.UUID)
		}
		byGPU[s.UUID] = append(byGPU[s.UUID], stamp{s.Time.UnixMilli(), ivMS, s.EnergyMJ, i})
		for _, j := range s.Jobs {
			k := jobKey{h.Cluster, j.Job, j.Restart}
			if _, ok := c.alloc[k]; ok {
				continue
			}
			a, err := b.jobAlloc(h.Cluster, j.Job, j.Restart, node, h.Node)
			if err != nil {
				return nil, err
			}
			c.alloc[k] = a
		}
	}
	for _, u := range uuids {
		st := byGPU[u]
		// The agent writes them in time order: sort only what is not.
		if !sort.SliceIsSorted(st, func(i, j int) bool { return st[i].t < st[j].t }) {
			sort.SliceStable(st, func(i, j int) bool { return st[i].t < st[j].t })
		}
		stored, err := b.storedAround(u, st[0].t, st[len(st)-1].t+ivMS)
		if err != nil {
			return nil, err
		}
		all := mergeStamps(st, stored)
		for i := range all {
			cur := all[i]
			if i > 0 {
				prev := all[i-1]
				if gap := cur.t - prev.t; float64(gap) < minGapFraction*float64(prev.iv) {
					return nil, reject("samples of GPU %s at %s and %s overlap (interval %.3g s)", u,
						time.UnixMilli(prev.t).UTC().Format(time.RFC3339Nano), time.UnixMilli(cur.t).UTC().Format(time.RFC3339Nano), float64(prev.iv)/1000)
				}
				if err := energyPlausible(u, prev, cur); err != nil {
					return nil, err
				}
			}
			if cur.sample < 0 {
				continue
			}
			// A window ends where the next sample starts. A stored sample
			// before it kept its whole window when stored (this one was not
			// known then): this one starts after it.
			w := window{cur.t, cur.t + cur.iv}
			if i > 0 && all[i-1].sample < 0 {
				w.lo = max(w.lo, all[i-1].t+all[i-1].iv)
				c.prevStored[cur.sample] = all[i-1].t
			}
			if i+1 < len(all) {
				w.hi = min(w.hi, all[i+1].t)
				if all[i+1].sample < 0 {
					c.next[cur.sample] = all[i+1]
				}
			}
			w.hi = max(w.hi, w.lo)
			c.win[cur.sample] = w
		}
	}
	return c, nil
}

// energyPlausible refuses a counter that rose faster than a GPU can draw
// between two readings the ledger would take a delta of (energyDelta).
func energyPlausible(uuid string, prev, cur stamp) error {
	if prev.mj == nil || cur.mj == nil || cur.t-prev.t > 3*max(prev.iv, 1000) {
		return nil
	}
	d := *cur.mj
	if *cur.mj >= *prev.mj {
		d = *cur.mj - *prev.mj
	}
	limit := uint64(cur.t-prev.t)*MaxGPUPowerMW/1000 + energySlackMJ // mW × ms / 1000 = mJ
	if d > limit {
		return reject("GPU %s energy counter rose %d mJ in %.3g s, more than %d W can draw", uuid, d,
			float64(cur.t-prev.t)/1000, MaxGPUPowerMW/1000)
	}
	return nil
}

// storedAround returns the GPU's stored sample before from, those in
// [from, to) and the first one after, in time order. A stored sample at the same time as one of
// the file's is the same reading shipped again: the writer skips it.
func (b *Batch) storedAround(uuid string, from, to int64) ([]stamp, error) {
	g, ok := b.gpus[uuid]
	var gid int64
	if ok {
		gid = g.id
	} else {
		row, err := b.queryRow(`SELECT id FROM gpus WHERE uuid = ?`, uuid)
		if err != nil {
			return nil, err
		}
		switch err := row.Scan(&gid); {
		case errors.Is(err, sql.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("gpu %s: %w", uuid, err)
		}
	}
	// A file that starts after the GPU's newest stored sample (the
	// agent ships in order) needs only that one.
	last, err := b.newestSample(gid)
	if err != nil {
		return nil, err
	}
	if !last.ok {
		return nil, nil
	}
	if last.s.t < from {
		return []stamp{last.s}, nil
	}
	var out []stamp
	if r, ok, err := b.sampleBefore(gid, from); err != nil {
		return nil, fmt.Errorf("samples of gpu %s: %w", uuid, err)
	} else if ok {
		out = append(out, stampOf(&r))
	}
	errFull := errors.New("full")
	err = b.eachSample(gid, from, to, func(r *sampleRow) error {
		if len(out) > 100000 {
			return errFull
		}
		out = append(out, stampOf(r))
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, fmt.Errorf("samples of gpu %s: %w", uuid, err)
	}
	// And the one after: its energy delta may have to be taken again.
	if r, ok, err := b.sampleFrom(gid, to); err != nil {
		return nil, fmt.Errorf("samples of gpu %s: %w", uuid, err)
	} else if ok {
		out = append(out, stampOf(&r))
	}
	return out, nil
}

// newest is a GPU's newest stored sample as the batch knows it; ok is
// false when the GPU has none.
type newest struct {
	s  stamp
	ok bool
}

func (b *Batch) newestSample(gid int64) (newest, error) {
	if n, ok := b.newest[gid]; ok {
		return n, nil
	}
	r, ok, err := b.sampleBefore(gid, math.MaxInt64)
	if err != nil {
		return newest{}, fmt.Errorf("newest sample of gpu %d: %w", gid, err)
	}
	n := newest{}
	if ok {
		n = newest{s: stampOf(&r), ok: true}
	}
	if b.newest == nil {
		b.newest = map[int64]newest{}
	}
	b.newest[gid] = n
	return n, nil
}

// stampOf is a stored sample's stamp.
func stampOf(r *sampleRow) stamp {
	st := stamp{sample: -1, t: r.ints[colT]}
	st.iv, _ = r.num(colInterval)
	if mj, ok := r.num(colEnergy); ok {
		v := uint64(mj)
		st.mj = &v
	}
	return st
}

// stored keeps the batch's newest sample of a GPU up to date after an
// insert (only where it is known: else the next check asks).
func (b *Batch) stored(gid, tms, ivMS int64, mj *uint64) {
	if n, ok := b.newest[gid]; ok && (!n.ok || tms > n.s.t) {
		b.newest[gid] = newest{s: stamp{t: tms, iv: ivMS, mj: mj, sample: -1}, ok: true}
	}
}

// mergeStamps merges the file's samples with the stored ones in time
// order; a stored sample at the time of a file's one is dropped (the
// writer skips that sample as already stored).
func mergeStamps(file, stored []stamp) []stamp {
	if len(stored) == 0 {
		return file
	}
	if len(stored) == 1 && stored[0].t < file[0].t {
		return append(stored, file...)
	}
	at := make(map[int64]bool, len(stored))
	for _, s := range stored {
		at[s.t] = true
	}
	out := make([]stamp, 0, len(file)+len(stored))
	for _, s := range file {
		if at[s.t] {
			s.sample = -2 // stored already: neither checked nor attributed
		}
		out = append(out, s)
	}
	out = append(out, stored...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].t < out[j].t })
	// Keep one stamp per stored time: the stored one.
	keep := out[:0]
	for _, s := range out {
		if s.sample == -2 {
			continue
		}
		keep = append(keep, s)
	}
	return keep
}
