package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/aicloud/gpusuite/internal/record"
)

// storedSample is what counting a stored sample for a job needs.
type storedSample struct {
	t, iv, next int64 // ms; next: the GPU's next sample, 0 if none
	job         int64
	restart     int
	jobs        sql.NullString
	idle        bool
	util, delta sql.NullInt64
	power       sql.NullInt64
	metrics     sql.NullString
}

// window is the part of time the sample stands for: [t, t + interval),
// cut short where the GPU's next sample starts, as when it was stored.
func (s *storedSample) window() window {
	w := window{s.t, s.t + s.iv}
	if s.next > 0 {
		w.hi = min(w.hi, s.next)
	}
	w.hi = max(w.hi, w.lo)
	return w
}

// shares is the sample's attribution: its jobs JSON, else its first job
// whole.
func (s *storedSample) shares() ([]record.JobShare, error) {
	if !s.jobs.Valid {
		if s.job == 0 {
			return nil, nil
		}
		return []record.JobShare{{Job: uint64(s.job), Restart: s.restart, Share: 1, Idle: s.idle}}, nil
	}
	var js []record.JobShare
	if err := json.Unmarshal([]byte(s.jobs.String), &js); err != nil {
		return nil, fmt.Errorf("sample jobs at %d: %w", s.t, err)
	}
	return js, nil
}

// utilization is the sample's utilization, nil when missing.
func (s *storedSample) utilization() *int64 {
	if !s.util.Valid {
		return nil
	}
	u := s.util.Int64
	return &u
}

func (s *storedSample) energy() *int64 {
	if !s.delta.Valid {
		return nil
	}
	v := s.delta.Int64
	return &v
}

// storedOf is a stored sample as the recount reads it; next is the
// GPU's next sample's time, 0 if none.
func storedOf(r *sampleRow, next int64) storedSample {
	s := storedSample{t: r.ints[colT], next: next}
	s.iv, _ = r.num(colInterval)
	s.job, _ = r.num(colJob)
	rs, _ := r.num(colRestart)
	s.restart = int(rs)
	idle, _ := r.num(colIdle)
	s.idle = idle != 0
	s.jobs.String, s.jobs.Valid = r.text(colJobs)
	s.metrics.String, s.metrics.Valid = r.text(colMetrics)
	s.util.Int64, s.util.Valid = r.num(colUtil)
	s.delta.Int64, s.delta.Valid = r.num(colEnergyDelta)
	s.power.Int64, s.power.Valid = r.num(colPower)
	return s
}

// redoDelta takes the energy delta of the stored sample nx again against
// a reading (t, mj) just stored before it (a deferred segment), and moves
// the difference into its jobs' hours: the old delta ran from an older
// reading and so already covered the new one's part.
func (b *Batch) redoDelta(h *record.SegmentHeader, node, gid, t int64, mj uint64, nx stamp) error {
	ss, err := b.samplesMaybeOf(gid, nx.t, nx.t+1, 0, -1)
	if err != nil {
		return err
	}
	if len(ss) == 0 {
		return fmt.Errorf("sample of gpu %d at %d: %w", gid, nx.t, sql.ErrNoRows)
	}
	s := ss[0]
	var nd *int64
	if s.t-t <= 3*max(s.iv, 1000) {
		d := int64(*nx.mj)
		if *nx.mj >= mj {
			d = int64(*nx.mj - mj)
		}
		nd = &d
	}
	od := s.energy()
	if (od == nil) == (nd == nil) && (od == nil || *od == *nd) {
		return nil
	}
	if err := b.updateSample(gid, s.t, func(r *sampleRow) {
		if nd == nil {
			r.drop(colEnergyDelta)
		} else {
			r.put(colEnergyDelta, *nd)
		}
	}); err != nil {
		return err
	}
	if err := b.moveBucketEnergy(gid, &s, od, nd); err != nil {
		return err
	}
	shares, err := s.shares()
	if err != nil {
		return err
	}
	for _, js := range shares {
		if js.Job == 0 {
			continue
		}
		a, err := b.jobAlloc(h.Cluster, js.Job, js.Restart, node, h.Node)
		if err != nil {
			return err
		}
		// Only the energy differs: the same window, cut the same way.
		b.addSampleUse(a.row, node, s.window(), &a, a, s.iv, s.utilization(), js, od, nd)
	}
	return nil
}

// prunedNote marks a job on a node whose window moved over hours whose
// samples are gone: those hours keep what they were counted as.
const prunedNote = "samples_pruned_not_recounted"

// recount counts a job's stored samples on node again where its window
// moved from old to nw (the edges between them only), and applies the
// difference to the job hours, rollups and totals through addUse. It
// returns the ranges (Unix ms) that reach back before the samples were
// pruned: their hours keep what the gone samples counted, which the
// caller clamps to the new allocation (clampPruned).
func (b *Batch) recount(job, node int64, old, nw alloc) ([][2]int64, error) {
	var ranges [][2]int64
	if old.hi <= nw.lo || nw.hi <= old.lo {
		ranges = append(ranges, [2]int64{min(old.lo, nw.lo), max(old.hi, nw.hi)})
	} else {
		if old.lo != nw.lo {
			ranges = append(ranges, [2]int64{min(old.lo, nw.lo), max(old.lo, nw.lo)})
		}
		if old.hi != nw.hi {
			ranges = append(ranges, [2]int64{min(old.hi, nw.hi), max(old.hi, nw.hi)})
		}
	}
	// An open edge ends at the job's first or last counted sample. Only
	// the first range can open low and only the last high, so each is
	// read at most once.
	for i := range ranges {
		r := &ranges[i]
		if r[0] == math.MinInt64 {
			first, err := b.firstCounted(job, node)
			if err != nil {
				return nil, err
			}
			r[0] = first
		}
		if r[1] == math.MaxInt64 {
			last, err := b.lastCounted(job, node)
			if err != nil {
				return nil, err
			}
			// The last sample may start before the range and reach into
			// it (recountRange reads from the one before r[0]).
			if last != math.MinInt64 {
				r[1] = max(last, r[0]+1)
			} else {
				r[1] = last
			}
		}
	}
	row, err := b.queryRow(`SELECT job_id, restart FROM jobs WHERE id = ?`, job)
	if err != nil {
		return nil, err
	}
	var jobID int64
	var restart int
	if err := row.Scan(&jobID, &restart); err != nil {
		return nil, fmt.Errorf("job %d: %w", job, err)
	}
	gpus, err := b.nodeGPUs(node)
	if err != nil {
		return nil, err
	}
	pruned, err := b.prunedBefore()
	if err != nil {
		return nil, err
	}
	seen := map[[2]int64]bool{}
	var gone [][2]int64
	for _, r := range ranges {
		if r[0] >= r[1] {
			continue
		}
		lost := r[0] < pruned
		for _, g := range gpus {
			reached, err := b.recountRange(job, node, uint64(jobID), restart, g, r, old, nw, seen)
			if err != nil {
				return nil, err
			}
			// With no stored sample before the range, the one that
			// reached into it may be among the pruned.
			lost = lost || !reached && pruned != math.MinInt64
		}
		if lost {
			gone = append(gone, r)
		}
	}
	if len(gone) > 0 {
		if _, err := b.exec(`UPDATE job_nodes SET quality = CASE WHEN quality = '' THEN ? ELSE quality || '; ' || ? END
 WHERE job = ? AND node_id = ? AND instr(quality, ?) = 0`, prunedNote, prunedNote, job, node, prunedNote); err != nil {
			return nil, err
		}
	}
	return gone, nil
}

// clampPruned holds the job's hours on node within the ranges gone (Unix
// ms) to their allocation: where an edge moved inward over pruned
// samples, an hour keeps the used, idle and sampled seconds of the longer
// allocation, which could pass the shorter one (idle ≤ allocated, #14).
// Each figure over allocated is cut to it through addUse, so that the
// rollups and the job's totals move with it. Call it after the new
// allocation is in the pending figures.
func (b *Batch) clampPruned(job, node int64, gone [][2]int64) error {
	if len(gone) == 0 {
		return nil
	}
	if err := b.flushUse(); err != nil {
		return err
	}
	for _, r := range gone {
		lo, hi := r[0]/msPerHour, (r[1]-1)/msPerHour
		rows, err := b.query(`SELECT hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s FROM job_hours
 WHERE job = ? AND node_id = ? AND hour >= ? AND hour <= ?`, job, node, lo, hi)
		var cuts []useKey
		var ds []Usage
		err = eachRow(rows, err, func(r batchRows) error {
			var h, a int64
			var used, idle, sample float64
			if err := r.Scan(&h, &a, &used, &idle, &sample); err != nil {
				return err
			}
			al := float64(max(a, 0))
			d := Usage{UsedS: min(used, al) - used, IdleS: min(idle, al) - idle, SampleS: min(sample, al) - sample}
			if d != (Usage{}) {
				cuts, ds = append(cuts, useKey{job, node, h}), append(ds, d)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("job hours of %d on node %d: %w", job, node, err)
		}
		for i, k := range cuts {
			b.addUse(k, ds[i])
		}
	}
	return nil
}

// recountRange counts again the samples of one GPU whose window may reach
// into [r0, r1): from the last one before r0 (earlier ones end where a
// later one starts) to r1. reached says a stored sample before r0 was
// found.
func (b *Batch) recountRange(job, node int64, jobID uint64, restart int, gid int64, r [2]int64, old, nw alloc, seen map[[2]int64]bool) (reached bool, err error) {
	prev, found, err := b.sampleBefore(gid, r[0])
	if err != nil {
		return false, err
	}
	from := r[0]
	if found {
		from = prev.ints[colT]
	}
	ss, err := b.samplesMaybeOf(gid, from, r[1], jobID, restart)
	if err != nil {
		return false, err
	}
	for i := range ss {
		s := &ss[i]
		k := [2]int64{gid, s.t}
		if seen[k] {
			continue
		}
		seen[k] = true
		shares, err := s.shares()
		if err != nil {
			return false, err
		}
		for _, js := range shares {
			if js.Job != jobID || js.Restart != restart {
				continue
			}
			b.addSampleUse(job, node, s.window(), &old, nw, s.iv, s.utilization(), js, s.energy(), s.energy())
			if err := b.recountMetrics(remaxKey{job, gid, jobID, restart}, s, old, nw); err != nil {
				return false, err
			}
		}
	}
	return found, nil
}

// samplesMaybeOf reads, in time order, a GPU's stored samples from
// t_ms from to to that may be the job run's: its own, and those several
// jobs shared (their shares say whose); every one for restart -1.
func (b *Batch) samplesMaybeOf(gid, from, to int64, jobID uint64, restart int) ([]storedSample, error) {
	var ss []storedSample
	var last *storedSample // the last one read, whoever's: its next is the sample after it
	err := b.eachSample(gid, from, to, func(r *sampleRow) error {
		t := r.ints[colT]
		if last != nil {
			last.next = t
			last = nil
		}
		job, _ := r.num(colJob)
		rs, _ := r.num(colRestart)
		_, shared := r.text(colJobs)
		if restart >= 0 && !shared && (job != int64(jobID) || rs != int64(restart)) {
			return nil
		}
		ss = append(ss, storedOf(r, 0))
		last = &ss[len(ss)-1]
		return nil
	})
	if err == nil && last != nil {
		var nx sampleRow
		var ok bool
		if nx, ok, err = b.sampleFrom(gid, to); ok {
			last.next = nx.ints[colT]
		}
	}
	if err != nil {
		return nil, fmt.Errorf("samples of gpu %d: %w", gid, err)
	}
	return ss, nil
}

// firstCounted is the start of the first hour the job has sampled time
// in on node (no lower bound is ever recounted further back).
func (b *Batch) firstCounted(job, node int64) (int64, error) {
	if err := b.flushUse(); err != nil {
		return 0, err
	}
	h, err := b.queryNullInt(fmt.Sprintf("first counted hour of job %d", job), `SELECT min(hour) FROM job_hours WHERE job = ? AND node_id = ? AND sample_s != 0`, job, node)
	if err != nil {
		return 0, err
	}
	if !h.Valid {
		return math.MaxInt64, nil // nothing counted: an empty range
	}
	return h.Int64 * 3_600_000, nil
}

// lastCounted is just after the job's last sample on node.
func (b *Batch) lastCounted(job, node int64) (int64, error) {
	row, err := b.queryRow(`SELECT last_sample FROM job_nodes WHERE job = ? AND node_id = ?`, job, node)
	if err != nil {
		return 0, err
	}
	var l sql.NullInt64
	if err := row.Scan(&l); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("last sample of job %d: %w", job, err)
	}
	t := max(l.Int64, b.lastSample[[2]int64{job, node}])
	if t == 0 {
		return math.MinInt64, nil // nothing counted: an empty range
	}
	return (t + 1) * 1000, nil
}

// nodeGPUs lists the GPU ids of a node.
func (b *Batch) nodeGPUs(node int64) ([]int64, error) {
	rows, err := b.query(`SELECT id FROM gpus WHERE node_id = ? ORDER BY id`, node)
	out, err := collect(rows, err, func(r batchRows, g *int64) error { return r.Scan(g) })
	if err != nil {
		return nil, fmt.Errorf("gpus of node %d: %w", node, err)
	}
	return out, nil
}

// prunedKey is the meta key of the time (Unix ms) before which samples
// were pruned (PruneSamples).
const prunedKey = "samples_pruned_before"

func (b *Batch) prunedBefore() (int64, error) {
	row, err := b.queryRow(`SELECT value FROM meta WHERE key = ?`, prunedKey)
	if err != nil {
		return 0, err
	}
	return scanPruned(row)
}

// scanPruned reads the pruned mark from a query of its meta value:
// math.MinInt64 when samples were never pruned.
func scanPruned(row interface{ Scan(...any) error }) (int64, error) {
	var v string
	switch err := row.Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return math.MinInt64, nil
	case err != nil:
		return 0, fmt.Errorf("meta %s: %w", prunedKey, err)
	}
	t, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %q: %w", prunedKey, v, err)
	}
	return t, nil
}

// notePrunedSQL moves the pruned mark (key, value) forward, never back.
const notePrunedSQL = `INSERT INTO meta(key, value) VALUES(?, ?)
ON CONFLICT(key) DO UPDATE SET value = CASE WHEN CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER) THEN excluded.value ELSE value END`

// notePruned records that samples before t (Unix ms) are gone.
func (b *Batch) notePruned(t int64) error {
	_, err := b.exec(notePrunedSQL, prunedKey, strconv.FormatInt(t, 10))
	return err
}
