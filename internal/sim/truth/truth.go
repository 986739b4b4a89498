// Package truth is the simulators' ground-truth oracle: the accounting
// definitions (DESIGN.md, docs/store.md) applied to what a simulated GPU did,
// never to what the pipeline recorded. simcluster and gendata both count
// through it, so the two cannot disagree on what a sample is worth.
package truth

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

// Add adds o to u.
func (u *Usage) Add(o Usage) {
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

// Sample is one reading of a GPU allocated to a job, as the simulator
// produced it. Times are Unix milliseconds.
type Sample struct {
	// T is the sample's time; it stands for [T, T+Interval).
	T, Interval int64
	// Start and End bound the job's allocation; without HasEnd it is open.
	Start, End int64
	HasEnd     bool
	Util       uint32
	// Idle: the GPU ran none of the job's processes or was under the idle
	// threshold.
	Idle bool
	// Lost: the GPU was lost, so the sample holds no values.
	Lost bool
	// EnergyDelta is the energy counter's rise since the GPU's previous
	// reading (resets undone); EnergyKnown is false when there was none
	// close enough (a gap over 3 intervals).
	EnergyDelta uint64
	EnergyKnown bool
}

// Part is the milliseconds of the sample's [T, T+Interval) inside the
// allocation: the ledger never counts past allocated.
func (s Sample) Part() int64 {
	hi := s.T + s.Interval
	if s.HasEnd {
		hi = min(hi, s.End)
	}
	return hi - max(s.T, s.Start)
}

// AddSample counts one sample of the job into u.
func (u *Usage) AddSample(s Sample) {
	part := s.Part()
	parts := float64(part) / 1000
	u.Samples++
	u.SampleS += parts
	u.AgentSampleS += float64(s.Interval) / 1000
	if s.Lost {
		return
	}
	u.UsedS += float64(s.Util) * parts / 100
	if s.Idle {
		u.IdleS += parts
		u.AgentIdleS += float64(s.Interval) / 1000
	}
	if s.EnergyKnown {
		u.EnergyMJ += int64(float64(s.EnergyDelta)*float64(part)/float64(s.Interval) + 0.5)
	}
}
