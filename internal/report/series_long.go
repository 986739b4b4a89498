package report

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"sync"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// longSamples is how many samples of one GPU in a job's window make its
// series read as stretches summed by the database (store.JobSampleBins)
// instead of sample by sample: handing each of a 20-day job's 1.38 M
// samples to Go took seconds (issue 29). Shorter jobs keep the exact
// fold of series.
const longSamples = 20_000

// gpuSeries is series for a GPU with fewer than longSamples samples in
// the window, seriesBins for one with more.
func (d *DB) gpuSeries(ctx context.Context, gpuID, job int64, restart int, from, to, allocEnd int64, maxPts int) ([]Point, sampleTotals, error) {
	long, err := d.st.GPUSamplesAtLeast(ctx, gpuID, from, to, longSamples)
	if err != nil {
		return nil, sampleTotals{}, d.wrap(err)
	}
	if !long {
		return d.series(ctx, gpuID, job, restart, from, to, allocEnd, maxPts)
	}
	return d.seriesBins(ctx, gpuID, job, restart, from, to, allocEnd, maxPts)
}

// seriesWorkers is how many GPUs' series of one job are read at once,
// each on a connection of the read pool (store.ReadConns): a long job's
// GPUs are summed by the database in parallel, without taking every
// connection from the requests beside it.
const seriesWorkers = 2

// loadSeries reads each of the job's GPUs' series and, where the figures
// come from the samples (no aggregate, or the job still runs), its
// figures.
func (d *DB) loadSeries(ctx context.Context, det *Detail, from, to, allocEnd int64) error {
	j := &det.Job
	n := seriesPoints(len(det.GPUs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(det.GPUs))
	sem := make(chan struct{}, seriesWorkers)
	var wg sync.WaitGroup
	for i := range det.GPUs {
		wg.Add(1)
		sem <- struct{}{}
		go func(g *GPUStat) {
			defer func() { <-sem; wg.Done() }()
			pts, tot, err := d.gpuSeries(ctx, g.gpuID, j.JobID, j.Restart, from, to, allocEnd, n)
			if err != nil {
				errs[i] = err
				cancel()
				return
			}
			g.Series = pts
			if tot.n > 0 && (g.Source == "none" || j.End == nil) {
				fromSamples(g, tot)
			}
		}(&det.GPUs[i])
	}
	wg.Wait()
	// The first GPU's own error, not the cancellation it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

// binAcc is one stretch of a long series: the database's sums of the
// run's own samples plus the shares of the shared ones.
type binAcc struct {
	first, n            int64
	winMs, idleMs       float64
	utilWMs, utilMs     float64 // for the point's mean
	utilShareWMs        float64 // Σ util × window × share, for the totals
	powerWMs, powerMs   float64
	utilMax, memMax     float64
	haveU, haveM, haveE bool
	energyMJ            int64
}

// seriesBins is series for a long job: the same stretches (maxPts of
// equal span) and figures, summed by the database. Each sample's window
// is its interval cut at the job's end; where samples overlap (the fold
// cuts each at the next), a stretch's windows are cut to the time up to
// the next stretch's first sample, so sampled and idle time still never
// pass the allocation.
func (d *DB) seriesBins(ctx context.Context, gpuID, job int64, restart int, from, to, allocEnd int64, maxPts int) ([]Point, sampleTotals, error) {
	var tot sampleTotals
	span := max(1, (to-from+int64(maxPts)-1)/int64(maxPts))
	rows, err := d.st.JobSampleBins(ctx, gpuID, job, restart, from, to, allocEnd, span)
	if err != nil {
		return nil, tot, d.wrap(err)
	}
	accs := make(map[int64]*binAcc, len(rows))
	for _, b := range rows {
		a := &binAcc{first: b.FirstMs, n: b.N, winMs: float64(b.WindowMs), idleMs: float64(b.IdleMs), utilWMs: float64(b.UtilWMs),
			utilMs: float64(b.UtilMs), utilShareWMs: float64(b.UtilWMs), powerWMs: float64(b.PowerWMs), powerMs: float64(b.PowerMs)}
		if b.UtilMax != nil {
			a.utilMax, a.haveU = float64(*b.UtilMax), true
		}
		if b.MemMax != nil {
			a.memMax, a.haveM = float64(*b.MemMax), true
		}
		if b.EnergyMJ != nil {
			a.energyMJ, a.haveE = *b.EnergyMJ, true
		}
		accs[b.Bin] = a
	}
	err = d.st.JobShared(ctx, gpuID, from, to, func(r *store.SampleRow) {
		var shares []record.JobShare
		if json.Unmarshal([]byte(*r.Jobs), &shares) != nil {
			return
		}
		share, idle := 0.0, false
		for _, s := range shares {
			if int64(s.Job) == job && s.Restart == restart {
				share, idle = s.Share, s.Idle
			}
		}
		if share == 0 {
			return
		}
		bin := (r.TMs - from) / span
		a := accs[bin]
		if a == nil {
			a = &binAcc{first: r.TMs}
			accs[bin] = a
		}
		a.first = min(a.first, r.TMs)
		a.n++
		w := float64(max(0, min(r.IntervalMs, allocEnd-r.TMs)))
		a.winMs += w
		if idle {
			a.idleMs += w
		}
		if r.Util != nil {
			u := float64(*r.Util)
			a.utilWMs += u * w
			a.utilMs += w
			a.utilShareWMs += u * w * share
			a.utilMax, a.haveU = max(a.utilMax, u), true
		}
		if r.MemUsedMiB != nil {
			a.memMax, a.haveM = max(a.memMax, float64(*r.MemUsedMiB)), true
		}
		if r.PowerMW != nil {
			a.powerWMs += float64(*r.PowerMW) * w
			a.powerMs += w
		}
		if r.EnergyDeltaMJ != nil {
			a.energyMJ += int64(float64(*r.EnergyDeltaMJ) * share)
			a.haveE = true
		}
	})
	if err != nil {
		return nil, tot, d.wrap(err)
	}
	keys := make([]int64, 0, len(accs))
	for k := range accs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([]Point, 0, len(keys))
	for i, k := range keys {
		a := accs[k]
		limit := float64(math.MaxInt64)
		if i+1 < len(keys) {
			limit = float64(accs[keys[i+1]].first - a.first)
		} else if allocEnd != math.MaxInt64 {
			limit = float64(max(0, allocEnd-a.first))
		}
		if a.winMs > limit {
			f := limit / a.winMs
			a.winMs, a.idleMs, a.utilShareWMs = limit, a.idleMs*f, a.utilShareWMs*f
		}
		p := Point{T: a.first, Interval: a.winMs / 1000}
		if a.utilMs > 0 {
			v := a.utilWMs / a.utilMs
			p.Util = &v
		}
		if a.haveM {
			v := a.memMax
			p.MemMiB = &v
		}
		if a.powerMs > 0 {
			v := a.powerWMs / a.powerMs / 1000
			p.PowerW = &v
		}
		out = append(out, p)
		tot.n += int(a.n)
		tot.sampleS += a.winMs / 1000
		tot.idleS += a.idleMs / 1000
		tot.utilShareS += a.utilShareWMs / 1000
		if a.haveU {
			tot.utilMax, tot.haveU = max(tot.utilMax, a.utilMax), true
		}
		if a.haveM {
			tot.memMax, tot.haveM = max(tot.memMax, a.memMax), true
		}
		if a.haveE {
			tot.energyMJ += a.energyMJ
			tot.haveE = true
		}
	}
	return out, tot, nil
}
