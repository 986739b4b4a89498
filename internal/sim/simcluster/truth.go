package simcluster

import (
	"slices"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/sim/truth"
)

// Usage is the oracle's usage of a job, a team or the cluster.
type Usage = truth.Usage

// JobTruth is one job with what an exact pipeline must record for it.
type JobTruth struct {
	*Job
	Usage
	// LostSamples counts samples taken while one of its GPUs was lost;
	// Reset is set when an energy counter of its GPUs was reset while it
	// ran.
	LostSamples int64
	Reset       bool
}

// Truth is the ground truth of a simulated cluster, computed from the
// workload definitions alone (never from what the agent recorded).
type Truth struct {
	Cluster    string
	Start, End time.Time
	Interval   time.Duration
	Nodes      int
	GPUs       int // per node
	// Jobs by id.
	Jobs  []JobTruth
	Total Usage
	// ByAccount is the usage of each Slurm account (the team).
	ByAccount map[string]Usage
	// Samples counts every sample taken, of allocated GPUs or not.
	Samples     int64
	LostSamples int64
	Resets      int64
	// IdleThreshold is agent.idle_threshold (percent).
	IdleThreshold float64
}

// Job returns the truth of job id.
func (t *Truth) Job(id uint64) (JobTruth, bool) {
	i := sort.Search(len(t.Jobs), func(i int) bool { return t.Jobs[i].ID >= id })
	if i < len(t.Jobs) && t.Jobs[i].ID == id {
		return t.Jobs[i], true
	}
	return JobTruth{}, false
}

// nodeTruth computes one node's truth: per GPU, second by second, the
// energy counter as the simulated GPU integrates it (from base, its
// reading at the start), and at every sample instant what the agent's
// sample holds by definition.
func nodeTruth(o *Options, p *nodePlan, base []uint64, idleThreshold float64) (jobs []JobTruth, samples, lost, resetCount int64) {
	iv := int64(o.Interval / time.Second)
	start, end := o.Start.Unix(), o.Start.Add(o.Duration).Unix()
	jobs = make([]JobTruth, len(p.jobs))
	type hold struct {
		j  int
		pr *profile
	}
	perGPU := make([][]hold, o.GPUsPerNode)
	for i, j := range p.jobs {
		jobs[i] = JobTruth{Job: j}
		jobs[i].Jobs = 1
		jobs[i].AllocS = int64(len(j.GPUs)) * (j.End.Unix() - j.Start.Unix())
		for k, g := range j.GPUs {
			perGPU[g] = append(perGPU[g], hold{i, j.profiles[k]})
		}
	}
	for g := 0; g < o.GPUsPerNode; g++ {
		hs := perGPU[g]
		sort.Slice(hs, func(a, b int) bool { return p.jobs[hs[a].j].Start.Before(p.jobs[hs[b].j].Start) })
		var losses [][2]int64
		// resets are the GPU's counter resets in time order, walked as
		// the seconds go (a map looked up every second of a fortnight
		// cost the demo a tenth of its time).
		var resets []int64
		for _, f := range p.faults {
			if f.gpu != g {
				continue
			}
			if f.to == 0 {
				resets = append(resets, f.from)
			} else {
				losses = append(losses, [2]int64{f.from, f.to})
			}
		}
		slices.Sort(resets)
		counter := base[g]
		var prevT int64
		var prevC uint64
		havePrev := false
		cur := 0 // first hold not yet over
		for u := start; u < end; u++ {
			for cur < len(hs) && p.jobs[hs[cur].j].End.Unix() <= u {
				cur++
			}
			var h *hold
			if cur < len(hs) && p.jobs[hs[cur].j].Start.Unix() <= u {
				h = &hs[cur]
			}
			var pr *profile
			if h != nil {
				pr = h.pr
			}
			reset := false
			for len(resets) > 0 && resets[0] <= u {
				reset = reset || resets[0] == u
				resets = resets[1:]
			}
			if reset {
				counter = 0
				resetCount++
				if h != nil {
					jobs[h.j].Reset = true
				}
			}
			if (u-start)%iv == 0 {
				samples++
				isLost := false
				for _, l := range losses {
					if l[0] <= u && u < l[1] {
						isLost = true
					}
				}
				if isLost {
					lost++
				}
				if h != nil {
					jt := &jobs[h.j]
					util, _, _, proc := pr.at(u)
					d, known := counter, havePrev && u-prevT <= 3*iv
					if counter >= prevC {
						d = counter - prevC
					}
					jt.AddSample(truth.Sample{
						T: u * 1000, Interval: iv * 1000, Start: p.jobs[h.j].Start.Unix() * 1000, End: p.jobs[h.j].End.Unix() * 1000, HasEnd: true,
						Util: util, Idle: !proc || float64(util) < idleThreshold, Lost: isLost, EnergyDelta: d, EnergyKnown: known,
					})
					if isLost {
						jt.LostSamples++
					}
				}
				if !isLost {
					havePrev, prevT, prevC = true, u, counter
				}
			}
			power := uint32(unallocatedPowerMW)
			if pr != nil {
				_, power, _, _ = pr.at(u)
			}
			counter += uint64(power)
			if h != nil {
				jobs[h.j].DrawnMJ += int64(power)
			}
		}
	}
	return jobs, samples, lost, resetCount
}
