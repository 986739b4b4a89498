package store

import (
	"context"
	"errors"
)

// SampleBin is a job run's own samples on one GPU within one stretch of
// time, summed by the database: a long job's series reads these instead
// of each sample (a 20-day job sampled every 10 s is 172,800 rows a GPU).
// Each sample's window is its interval cut at the run's end. Nil values:
// no sample in the stretch had the metric.
type SampleBin struct {
	Bin, FirstMs, N  int64
	WindowMs, IdleMs int64
	// UtilWMs is Σ util × window over the samples with a utilization,
	// UtilMs their windows; PowerWMs and PowerMs the same for power (mW).
	// UtilShareWMs is Σ util × window × the job's share (UtilWMs for
	// samples of the job alone).
	UtilWMs, UtilMs   int64
	UtilShareWMs      float64
	PowerWMs, PowerMs int64
	UtilMax, MemMax   *int64
	EnergyMJ          *int64
}

// JobSampleBins sums, per stretch of spanMs from originMs (stretch k is
// [originMs + k·spanMs, originMs + (k+1)·spanMs)), the samples of GPU
// gpuID in [fromMs, toMs) whose only job is Slurm job id job's run
// restart (samples shared with other jobs carry a jobs list: JobShared
// reads those). originMs is at most fromMs. allocEndMs cuts the windows
// (math.MaxInt64 while the job runs); toMs is at most allocEndMs+1, so no
// window is negative. The answer has at most (toMs-originMs)/spanMs+1
// rows.
func (s *Ledger) JobSampleBins(ctx context.Context, gpuID, job int64, restart int, originMs, fromMs, toMs, allocEndMs, spanMs int64) ([]SampleBin, error) {
	var out []SampleBin
	err := s.eachSample(ctx, gpuID, fromMs, toMs, func(r *sampleRow) error {
		j, _ := r.num(colJob)
		rs, _ := r.num(colRestart)
		if j != job || rs != int64(restart) || r.set&(1<<colJobs) != 0 {
			return nil
		}
		t := r.ints[colT]
		iv, _ := r.num(colInterval)
		w := min(iv, allocEndMs-t)
		bin := (t - originMs) / spanMs
		if len(out) == 0 || out[len(out)-1].Bin != bin {
			out = append(out, SampleBin{Bin: bin, FirstMs: t})
		}
		b := &out[len(out)-1]
		b.N++
		b.WindowMs += w
		if idle, _ := r.num(colIdle); idle != 0 {
			b.IdleMs += w * idle
		}
		if u, ok := r.num(colUtil); ok {
			b.UtilWMs += u * w
			b.UtilMs += w
			b.UtilMax = maxOf(b.UtilMax, u)
		}
		if p, ok := r.num(colPower); ok {
			b.PowerWMs += p * w
			b.PowerMs += w
		}
		if m, ok := r.num(colMemUsed); ok {
			b.MemMax = maxOf(b.MemMax, m)
		}
		if e, ok := r.num(colEnergyDelta); ok {
			if b.EnergyMJ == nil {
				b.EnergyMJ = new(int64)
			}
			*b.EnergyMJ += e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].UtilShareWMs = float64(out[i].UtilWMs)
	}
	return out, nil
}

// maxOf is the larger of *p and v, in a new value when p is nil.
func maxOf(p *int64, v int64) *int64 {
	if p == nil {
		return &v
	}
	*p = max(*p, v)
	return p
}

// JobShared calls fn, in time order, for the samples of GPU gpuID in
// [fromMs, toMs) that carry a jobs list (shared with other jobs, or
// partly outside one): JobSampleBins leaves them to the caller, who picks
// its job's share. The row is reused as in JobSamples.
func (s *Ledger) JobShared(ctx context.Context, gpuID, fromMs, toMs int64, fn func(*SampleRow)) error {
	var out SampleRow
	var vals [4]int64
	return s.eachSample(ctx, gpuID, fromMs, toMs, func(r *sampleRow) error {
		if r.set&(1<<colJobs) != 0 {
			seriesRow(&out, r, &vals)
			fn(&out)
		}
		return nil
	})
}

// GPUSamplesAtLeast reports whether GPU gpuID has at least n samples in
// [fromMs, toMs), reading no more than n of them; also when the window
// reaches into samples pruned while their series buckets are kept
// (store.series_retention), which then stand for them.
func (s *Ledger) GPUSamplesAtLeast(ctx context.Context, gpuID, fromMs, toMs int64, n int) (bool, error) {
	got := 0
	err := s.eachSample(ctx, gpuID, fromMs, toMs, func(*sampleRow) error {
		if got++; got >= n {
			return errStopSamples
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopSamples) {
		return false, err
	}
	if got >= n {
		return true, nil
	}
	m, err := s.pruneMarks(ctx)
	if err != nil {
		return false, err
	}
	return m.folded(fromMs, toMs), nil
}
