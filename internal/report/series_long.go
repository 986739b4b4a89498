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
// series read from the sums the writer keeps per 5 minutes
// (seriesBins) instead of sample by sample: handing each of a 20-day
// job's 1.38 M samples to Go took seconds (issue 29). Shorter jobs keep
// the exact fold of series.
const longSamples = 20_000

// gpuSeries is series for a GPU with fewer than longSamples samples in
// the window, seriesBins for one with more.
func (d *Ledger) gpuSeries(ctx context.Context, gpuID, job int64, restart int, from, to, allocEnd int64, maxPts int) ([]Point, sampleTotals, error) {
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
func (d *Ledger) loadSeries(ctx context.Context, det *Detail, from, to, allocEnd int64) error {
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

// add merges the sums b into a.
func (a *binAcc) add(b store.SampleBin) {
	if a.n == 0 || b.FirstMs < a.first {
		a.first = b.FirstMs
	}
	a.n += b.N
	a.winMs += float64(b.WindowMs)
	a.idleMs += float64(b.IdleMs)
	a.utilWMs += float64(b.UtilWMs)
	a.utilMs += float64(b.UtilMs)
	a.utilShareWMs += b.UtilShareWMs
	a.powerWMs += float64(b.PowerWMs)
	a.powerMs += float64(b.PowerMs)
	if b.UtilMax != nil {
		a.utilMax, a.haveU = max(a.utilMax, float64(*b.UtilMax)), true
	}
	if b.MemMax != nil {
		a.memMax, a.haveM = max(a.memMax, float64(*b.MemMax)), true
	}
	if b.EnergyMJ != nil {
		a.energyMJ += *b.EnergyMJ
		a.haveE = true
	}
}

// grid is where a series' stretches lie: stretch k is [origin + k·span,
// origin + (k+1)·span).
type grid struct{ origin, span int64 }

// foldGrid is the fold's (series): maxPts stretches from the window's
// start.
func foldGrid(from, to int64, maxPts int) grid {
	return grid{from, max(1, (to-from+int64(maxPts)-1)/int64(maxPts))}
}

// bucketGrid is a long series': stretches of whole series buckets
// (store.BucketMs, 5 minutes) from the bucket that holds from, at most
// maxPts of them, so that each bucket lies in one stretch. A point
// therefore stands for a multiple of 5 minutes, at least 5.
func bucketGrid(from, to int64, maxPts int) grid {
	origin := floorTo(from, store.BucketMs)
	per := max(1, (to-origin+int64(maxPts)-1)/int64(maxPts))
	return grid{origin, max(store.BucketMs, -floorTo(-per, store.BucketMs))}
}

// floorTo is the multiple of m at or below t.
func floorTo(t, m int64) int64 {
	r := t % m
	if r < 0 {
		r += m
	}
	return t - r
}

// seriesBins is series for a long job, on bucketGrid: the same figures,
// and a point for each stretch of whole buckets. Its window's buckets
// come from the sums the writer keeps (store.JobBucketBins, a few
// thousand rows for a 20-day job), its edges, the buckets before the
// samples' pruned mark and those reaching past the job's end from the
// samples, summed by the database (store.JobSampleBins).
func (d *Ledger) seriesBins(ctx context.Context, gpuID, job int64, restart int, from, to, allocEnd int64, maxPts int) ([]Point, sampleTotals, error) {
	return d.longSeries(ctx, gpuID, job, restart, from, to, allocEnd, bucketGrid(from, to, maxPts), true)
}

// longSeries is seriesBins on grid g; without buckets, or where g is not
// of whole buckets, every stretch is summed from the samples. Each
// sample's window is its interval cut at the job's end; where samples
// overlap (the fold cuts each at the next), a stretch's windows are cut
// to the time up to the next stretch's first sample, so sampled and idle
// time still never pass the allocation.
func (d *Ledger) longSeries(ctx context.Context, gpuID, job int64, restart int, from, to, allocEnd int64, g grid, buckets bool) ([]Point, sampleTotals, error) {
	var tot sampleTotals
	accs := map[int64]*binAcc{}
	put := func(b store.SampleBin) {
		a := accs[b.Bin]
		if a == nil {
			a = &binAcc{}
			accs[b.Bin] = a
		}
		a.add(b)
	}
	// raw sums the samples in [lo, hi): the run's own by the database,
	// the shared ones here, each for its share.
	raw := func(lo, hi int64) error {
		if lo >= hi {
			return nil
		}
		bins, err := d.st.JobSampleBins(ctx, gpuID, job, restart, g.origin, lo, hi, allocEnd, g.span)
		if err != nil {
			return err
		}
		for _, b := range bins {
			put(b)
		}
		return d.st.JobShared(ctx, gpuID, lo, hi, func(r *store.SampleRow) {
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
			w := max(0, min(r.IntervalMs, allocEnd-r.TMs))
			b := store.SampleBin{Bin: (r.TMs - g.origin) / g.span, FirstMs: r.TMs, N: 1, WindowMs: w}
			if idle {
				b.IdleMs = w
			}
			if r.Util != nil {
				b.UtilWMs, b.UtilMs, b.UtilMax = *r.Util*w, w, r.Util
				b.UtilShareWMs = float64(*r.Util) * float64(w) * share
			}
			b.MemMax = r.MemUsedMiB
			if r.PowerMW != nil {
				b.PowerWMs, b.PowerMs = *r.PowerMW*w, w
			}
			if r.EnergyDeltaMJ != nil {
				e := int64(float64(*r.EnergyDeltaMJ) * share)
				b.EnergyMJ = &e
			}
			put(b)
		})
	}
	lo, hi := from, from
	if buckets && g.origin%store.BucketMs == 0 && g.span%store.BucketMs == 0 {
		mark, err := d.st.PrunedBefore(ctx)
		if err != nil {
			return nil, tot, d.wrap(err)
		}
		lo = -floorTo(-max(from, mark), store.BucketMs)
		hi = floorTo(to, store.BucketMs)
		if allocEnd != math.MaxInt64 && lo < hi {
			if hi, err = d.st.BucketPastEnd(ctx, gpuID, job, restart, lo, hi, allocEnd); err != nil {
				return nil, tot, d.wrap(err)
			}
		}
	}
	if lo < hi {
		bins, err := d.st.JobBucketBins(ctx, gpuID, job, restart, g.origin, lo, hi, g.span)
		if err != nil {
			return nil, tot, d.wrap(err)
		}
		for _, b := range bins {
			put(b)
		}
	} else {
		lo, hi = to, to
	}
	for _, r := range [][2]int64{{from, lo}, {hi, to}} {
		if err := raw(r[0], r[1]); err != nil {
			return nil, tot, d.wrap(err)
		}
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
		p := Point{T: a.first, Interval: a.winMs / 1000, Util: weighted(a.utilWMs, a.utilMs)}
		if a.haveM {
			v := a.memMax
			p.MemMiB = &v
		}
		if v := weighted(a.powerWMs, a.powerMs); v != nil {
			*v /= 1000 // the mean in mW, then in W
			p.PowerW = v
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
