package report

import (
	"context"
	"encoding/json"
	"math"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// Point is one GPU's samples over a stretch of a job: one sample, or,
// for a job with more samples than a series may hold, the samples of an
// equal share of the job merged (util and power their time-weighted mean,
// memory its peak). nil values were missing.
type Point struct {
	T      int64    `json:"t_ms"`
	Util   *float64 `json:"util,omitempty"`
	MemMiB *float64 `json:"mem_mib,omitempty"`
	PowerW *float64 `json:"power_w,omitempty"`
	// Interval is the seconds the point's samples cover.
	Interval float64 `json:"-"`
}

// Bounds on a job's series (invariant 9): a 152-hour job sampled every
// second would otherwise be half a million points per GPU.
const (
	// MaxSeriesPoints is the most points one GPU's series holds.
	MaxSeriesPoints = 1000
	// MaxJobPoints is the most points all of a job's GPUs hold together;
	// a GPU gets at least minSeriesPoints.
	MaxJobPoints    = 16_000
	minSeriesPoints = 100
)

// seriesPoints is how many points each of a job's gpus GPUs may hold.
func seriesPoints(gpus int) int {
	if gpus <= 0 {
		return MaxSeriesPoints
	}
	return min(MaxSeriesPoints, max(minSeriesPoints, MaxJobPoints/gpus))
}

// sampleTotals are one GPU's figures over all of the job's samples, kept
// exactly while the series itself is merged into points.
type sampleTotals struct {
	n                   int
	sampleS, idleS      float64
	utilShareS          float64 // Σ util × interval × share
	utilMax, memMax     float64
	haveU, haveM, haveE bool
	energyMJ            int64
}

// pointAcc merges samples into one point.
type pointAcc struct {
	t, bin          int64
	n               int
	iv              float64
	utilS, utilIv   float64
	powerS, powerIv float64
	memMax          float64
	haveMem         bool
}

func (a *pointAcc) point() Point {
	p := Point{T: a.t, Interval: a.iv, Util: weighted(a.utilS, a.utilIv), PowerW: weighted(a.powerS, a.powerIv)}
	if a.haveMem {
		v := a.memMax
		p.MemMiB = &v
	}
	return p
}

// weighted is sum over weight, a mean weighted by the seconds each
// sample stood for; nil with no weight (nothing sampled it).
func weighted(sum, weight float64) *float64 {
	if weight > 0 {
		v := sum / weight
		return &v
	}
	return nil
}

// series reads one GPU's samples of the job (raw samples are kept for
// store.sample_retention) in [from, to) ms, merged into at most maxPts
// points of equal time span, and the exact totals over every sample.
// Rows are folded as they are read, so memory does not grow with the
// job's length.
//
// allocEnd (ms; math.MaxInt64 while the job runs) cuts the last sample's
// window as the store cuts it.
func (d *Ledger) series(ctx context.Context, gpuID, job int64, restart int, from, to, allocEnd int64, maxPts int) ([]Point, sampleTotals, error) {
	var tot sampleTotals
	span := max(1, (to-from+int64(maxPts)-1)/int64(maxPts))
	var out []Point
	var acc pointAcc
	// add counts one sample for sec seconds: its window, cut as the
	// store cuts it (at the GPU's next sample and the job's end), so that
	// sampled and idle time never pass the allocation.
	add := func(r *store.SampleRow, sec float64) {
		t, idle := r.TMs, r.Idle
		share := 0.0
		if r.Job == job && r.Restart == restart {
			share = 1
		}
		if r.Jobs != nil {
			var shares []record.JobShare
			if json.Unmarshal([]byte(*r.Jobs), &shares) == nil {
				share = 0
				for _, s := range shares {
					if int64(s.Job) == job && s.Restart == restart {
						share, idle = s.Share, s.Idle
					}
				}
			}
		}
		if share == 0 {
			return
		}
		tot.n++
		tot.sampleS += sec
		if idle {
			tot.idleS += sec
		}
		bin := (t - from) / span
		if acc.n > 0 && bin != acc.bin {
			out = append(out, acc.point())
			acc = pointAcc{}
		}
		if acc.n == 0 {
			acc.t, acc.bin = t, bin
		}
		acc.n++
		acc.iv += sec
		if r.Util != nil {
			u := float64(*r.Util)
			tot.utilShareS += u * sec * share
			tot.utilMax = max(tot.utilMax, u)
			tot.haveU = true
			// A zero interval still counts once in the mean.
			w := max(sec, 1e-3)
			acc.utilS += u * w
			acc.utilIv += w
		}
		if r.MemUsedMiB != nil {
			m := float64(*r.MemUsedMiB)
			tot.memMax = max(tot.memMax, m)
			tot.haveM = true
			acc.memMax = max(acc.memMax, m)
			acc.haveMem = true
		}
		if r.PowerMW != nil {
			w := max(sec, 1e-3)
			acc.powerS += float64(*r.PowerMW) / 1000 * w
			acc.powerIv += w
		}
		if r.EnergyDeltaMJ != nil {
			tot.energyMJ += int64(float64(*r.EnergyDeltaMJ) * share)
			tot.haveE = true
		}
	}
	// Each sample is counted when the next one is read, which may cut its
	// window; the last one is cut at the allocation's end only.
	var prev store.SampleRow
	var slots [4]int64
	var jobs string
	have := false
	window := func(r *store.SampleRow, next int64) float64 {
		end := min(r.TMs+r.IntervalMs, next, allocEnd)
		return float64(max(end-r.TMs, 0)) / 1000
	}
	err := d.st.JobSamples(ctx, gpuID, job, from, to, func(r *store.SampleRow) {
		if have {
			add(&prev, window(&prev, r.TMs))
		}
		// The store reuses the row and what its pointers point at.
		prev, have = *r, true
		for i, p := range []**int64{&prev.Util, &prev.MemUsedMiB, &prev.PowerMW, &prev.EnergyDeltaMJ} {
			if *p != nil {
				slots[i] = **p
				*p = &slots[i]
			}
		}
		if prev.Jobs != nil {
			jobs = *prev.Jobs
			prev.Jobs = &jobs
		}
	})
	if err != nil {
		return nil, tot, d.wrap(err)
	}
	if have {
		add(&prev, window(&prev, math.MaxInt64))
	}
	if acc.n > 0 {
		out = append(out, acc.point())
	}
	return out, tot, nil
}

// fromSamples fills a GPU's figures from its samples' totals.
func fromSamples(g *GPUStat, t sampleTotals) {
	g.Source = "samples"
	g.SampleS, g.IdleS = t.sampleS, t.idleS
	if t.haveU && t.sampleS > 0 {
		m, x := t.utilShareS/t.sampleS, t.utilMax
		g.UtilMean, g.UtilMax = &m, &x
	}
	if t.haveM {
		m := t.memMax
		g.MemMaxMiB = &m
	}
	if t.haveE {
		k := float64(t.energyMJ) / 3.6e9
		g.EnergyKWh = &k
	}
}
