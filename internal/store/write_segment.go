package store

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// Segment stores one validated segment's samples and returns how many
// were new (a sample already stored is skipped, and counted nowhere).
func (b *Batch) Segment(h *record.SegmentHeader, samples []record.Sample) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	node, err := b.Node(h.Cluster, h.Node)
	if err != nil {
		return 0, err
	}
	chk, err := b.checkSegment(h, node, samples)
	if err != nil {
		return 0, err
	}
	for k, a := range chk.alloc {
		if err := b.keepCounted(k, node, a); err != nil {
			return 0, err
		}
	}
	intervalMS := int64(h.Interval*1000 + 0.5)
	rows := make([]sampleRow, len(samples))
	deltas := make([]*int64, len(samples))
	// Rows go in in order, in runs: a run ends where an energy delta must
	// look at the stored samples, so that it sees the ones before it.
	flushed := 0
	// each whole GPU's energy delta by time, for its MIG instances' jobs
	parentDelta := map[parentAt]int64{}
	flush := func(upTo int) error {
		if upTo > flushed {
			if err := b.samples.insertPacks(b, rows[flushed:upTo]); err != nil {
				return err
			}
			flushed = upTo
		}
		return nil
	}
	for i := range samples {
		s := &samples[i]
		idx := s.Index
		gid, err := b.GPU(s.UUID, node, &idx, nil, "")
		if err != nil {
			return 0, err
		}
		tms := s.Time.UnixMilli()
		r := &rows[i]
		r.put(colGPU, gid)
		r.put(colT, tms)
		r.put(colInterval, intervalMS)
		if s.EnergyMJ != nil {
			if p, ok := b.prev[gid]; ok && chk.prevStored[i] > p.tms {
				// A stored sample lies between the batch's last reading and
				// this one (a deferred segment): the delta is against it.
				delete(b.prev, gid)
			}
			if !b.prevCached(gid, tms) {
				if err := flush(i); err != nil {
					return 0, err
				}
			}
			deltas[i], err = b.energyDelta(gid, tms, *s.EnergyMJ, intervalMS)
			if err != nil {
				return 0, err
			}
			if deltas[i] != nil {
				parentDelta[parentAt{s.UUID, tms}] = *deltas[i]
			}
		}
		foreign := int64(0)
		for _, p := range s.Procs {
			if p.Foreign {
				foreign++
			}
		}
		if len(s.Jobs) > 0 {
			j := s.Jobs[0]
			if j.Job != 0 {
				r.put(colJob, int64(j.Job))
			}
			if j.Restart != 0 {
				r.put(colRestart, int64(j.Restart))
			}
			if j.Idle {
				r.put(colIdle, int64(1))
			}
			if len(s.Jobs) > 1 || j.Share != 1 {
				data, err := json.Marshal(s.Jobs)
				if err != nil {
					return 0, fmt.Errorf("encode sample jobs: %w", err)
				}
				r.putText(colJobs, string(data))
			}
		}
		putU32(r, colUtil, s.GPUUtil)
		putU32(r, colMemUtil, s.MemUtil)
		putU64(r, colMemUsed, s.MemUsedMiB)
		putU32(r, colPower, s.PowerMW)
		putU64(r, colEnergy, s.EnergyMJ)
		if deltas[i] != nil {
			r.put(colEnergyDelta, *deltas[i])
		}
		putU32(r, colTemp, s.TempC)
		putU32(r, colSMClock, s.SMClockMHz)
		putU64(r, colThrottle, s.Throttle)
		putU64(r, colECC, s.ECCErrors)
		putU64(r, colXID, s.XIDErrors)
		r.put(colProcs, int64(len(s.Procs)))
		r.put(colForeign, foreign)
		if len(s.Missing) > 0 {
			r.putText(colMissing, strings.Join(s.Missing, "; "))
		}
		if len(s.Metrics) > 0 {
			m, err := sampleMetricsJSON(s.Metrics)
			if err != nil {
				return 0, err
			}
			r.putText(colMetrics, m)
		}
	}
	if err := flush(len(rows)); err != nil {
		return 0, err
	}
	n := 0
	var newest time.Time
	// the header's unsupported metrics, noted once a job and GPU
	unsup := parseUnsupported(h.Unsupported)
	noted := map[[2]int64]bool{}
	buckets := map[bucketKey]*bucketAcc{}
	for i := range samples {
		if !rows[i].isNew {
			continue
		}
		s := &samples[i]
		tms := s.Time.UnixMilli()
		b.stored(rows[i].ints[colGPU], tms, intervalMS, s.EnergyMJ)
		n++
		if s.Time.After(newest) {
			newest = s.Time
		}
		delta := deltas[i]
		addBucketSample(buckets, rows[i].ints[colGPU], tms, intervalMS, s, delta)
		jobDelta := delta
		if jobDelta == nil {
			jobDelta = sliceDelta(s, parentDelta)
		}
		var util *int64
		if s.GPUUtil != nil {
			u := int64(*s.GPUUtil)
			util = &u
		}
		for _, js := range s.Jobs {
			if js.Job == 0 {
				continue
			}
			job, err := b.Job(h.Cluster, js.Job, js.Restart)
			if err != nil {
				return n, err
			}
			// Only the part of the sample's window inside the job's
			// allocation on this node counts, each hour its own part:
			// used and idle never pass allocated, per job, GPU and hour.
			a := chk.alloc[jobKey{h.Cluster, js.Job, js.Restart}]
			b.addSampleUse(job, node, chk.win[i], nil, a, intervalMS, util, js, nil, jobDelta)
			gid := rows[i].ints[colGPU]
			b.addSampleMetrics(job, gid, chk.win[i], nil, a, s.PowerMW, s.Metrics)
			if un := unsup[s.UUID]; len(un) > 0 && !noted[[2]int64{job, gid}] {
				noted[[2]int64{job, gid}] = true
				b.noteUnsupported(job, gid, un)
			}
			if a.hi == math.MaxInt64 {
				// An open job's allocation runs to its newest sample's
				// end (reroll): brought there in this batch.
				b.rerolls[job] = true
			}
			ls := [2]int64{job, node}
			if tms/1000 > b.lastSample[ls] {
				b.lastSample[ls] = tms / 1000
			}
		}
		if nx := chk.next[i]; s.EnergyMJ != nil && nx.sample == -1 && nx.mj != nil {
			if err := b.redoDelta(h, node, rows[i].ints[colGPU], tms, *s.EnergyMJ, nx); err != nil {
				return n, err
			}
		}
	}
	if err := b.writeBuckets(buckets); err != nil {
		return n, err
	}
	if n > 0 {
		if err := b.NodeSeen(node, newest); err != nil {
			return n, err
		}
	}
	return n, nil
}

// parentAt is a whole GPU's sample: its UUID and time (Unix ms).
type parentAt struct {
	uuid string
	tms  int64
}

// sliceDelta is a MIG instance's part of its parent's energy delta over
// the same cycle (the agent samples them together, the parent first, in
// one segment): its jobs' energy, nil when not a MIG sample with a share
// or the parent has no delta then. It is not stored as the instance's
// energy_delta_mj, so the parent's energy is in the samples once.
func sliceDelta(s *record.Sample, parentDelta map[parentAt]int64) *int64 {
	share := s.ParentShare()
	if s.EnergyMJ != nil || share <= 0 {
		return nil
	}
	d, ok := parentDelta[parentAt{s.Parent(), s.Time.UnixMilli()}]
	if !ok {
		return nil
	}
	v := int64(math.Round(float64(d) * share))
	return &v
}

func putU32(r *sampleRow, col int, p *uint32) {
	if p != nil {
		r.put(col, int64(*p))
	}
}

func putU64(r *sampleRow, col int, p *uint64) {
	if p != nil {
		r.put(col, int64(*p))
	}
}

// prevCached reports whether energyDelta can answer for (gid, tms) from
// the batch's memory, without reading stored samples.
func (b *Batch) prevCached(gid, tms int64) bool {
	p, ok := b.prev[gid]
	return ok && p.tms < tms
}

// energyDelta is the energy counter's increase since the GPU's previous
// reading; a counter that went down was reset (driver reload) and counts
// from 0. Without a previous reading close enough, the delta is unknown.
func (b *Batch) energyDelta(gid, tms int64, mj uint64, intervalMS int64) (*int64, error) {
	p, ok := b.prev[gid]
	if !ok || p.tms >= tms {
		// A reading further back than the window below gives no delta
		// (as none at all): only the window is read.
		found := false
		var t, e int64
		err := b.eachSample(gid, tms-3*max(intervalMS, 1000), tms, func(r *sampleRow) error {
			if v, ok := r.num(colEnergy); ok {
				t, e, found = r.ints[colT], v, true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("previous energy of gpu %d: %w", gid, err)
		}
		if !found {
			b.prev[gid] = energyReading{tms, mj}
			return nil, nil
		}
		p = energyReading{t, uint64(e)}
	}
	b.prev[gid] = energyReading{tms, mj}
	if tms-p.tms > 3*max(intervalMS, 1000) {
		return nil, nil
	}
	var d int64
	if mj >= p.mj {
		d = int64(mj - p.mj)
	} else {
		d = int64(mj)
	}
	return &d, nil
}

func i64(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
