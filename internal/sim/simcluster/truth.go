package simcluster

import (
	"sort"
	"time"
)

// Usage is what the accounting definitions (DESIGN.md, docs/store.md)
// give for a job, a team or the cluster.
type Usage struct {
	Jobs int64
	// AllocS is allocated GPU-seconds: GPUs × (end − start).
	AllocS int64
	// Samples are the samples attributed to the job(s), SampleS their
	// GPU-seconds: of each sample's [t, t + interval), the part inside the
	// job's allocation (the ledger never counts past allocated).
	Samples int64
	SampleS float64
	// UsedS is Σ utilization/100 × that part over those samples.
	UsedS float64
	// IdleS is Σ that part over those samples where the GPU ran none of
	// the job's processes or was under the idle threshold.
	IdleS float64
	// AgentSampleS and AgentIdleS are SampleS and IdleS with whole
	// intervals, as the agent's job × GPU aggregates count them.
	AgentSampleS, AgentIdleS float64
	// EnergyMJ is Σ over those samples of the energy counter's rise since
	// the GPU's previous reading (a counter that went down was reset and
	// counts from 0; after a gap over 3 intervals the rise is unknown).
	EnergyMJ int64
	// DrawnMJ is the energy the GPUs drew from start to end: the counter's
	// rise from the prolog's reading to the epilog's, resets undone.
	DrawnMJ int64
}

func (u *Usage) add(o Usage) {
	u.Jobs += o.Jobs
	u.AllocS += o.AllocS
	u.Samples += o.Samples
	u.SampleS += o.SampleS
	u.UsedS += o.UsedS
	u.IdleS += o.IdleS
	u.AgentSampleS += o.AgentSampleS
	u.AgentIdleS += o.AgentIdleS
	u.EnergyMJ += o.EnergyMJ
	u.DrawnMJ += o.DrawnMJ
}

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
func nodeTruth(o *Options, p *nodePlan, base []uint64, idleThreshold float64) (jobs []JobTruth, samples, lost, resets int64) {
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
		resetAt := map[int64]bool{}
		for _, f := range p.faults {
			if f.gpu != g {
				continue
			}
			if f.to == 0 {
				resetAt[f.from] = true
			} else {
				losses = append(losses, [2]int64{f.from, f.to})
			}
		}
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
			if resetAt[u] {
				counter = 0
				resets++
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
					// The ledger counts the part of the sample's
					// [u, u+interval) inside the job's allocation.
					part := min(u+iv, p.jobs[h.j].End.Unix()) - u
					parts := float64(part)
					jt.Samples++
					jt.SampleS += parts
					jt.AgentSampleS += float64(iv)
					if isLost {
						jt.LostSamples++
					} else {
						util, _, _, proc := pr.at(u)
						jt.UsedS += float64(util) * parts / 100
						if !proc || float64(util) < idleThreshold {
							jt.IdleS += parts
							jt.AgentIdleS += float64(iv)
						}
						if havePrev && u-prevT <= 3*iv {
							d := counter
							if counter >= prevC {
								d = counter - prevC
							}
							jt.EnergyMJ += int64(float64(d)*float64(part*1000)/float64(iv*1000) + 0.5)
						}
					}
				}
				if !isLost {
					havePrev, prevT, prevC = true, u, counter
				}
			}
			_, power, _, _ := pr.at(u)
			counter += uint64(power)
			if h != nil {
				jobs[h.j].DrawnMJ += int64(power)
			}
		}
	}
	return jobs, samples, lost, resets
}
