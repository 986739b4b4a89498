package store

import (
	"cmp"
	"slices"

	"github.com/aicloud/gpusuite/internal/record"
)

// addUse adds d to the batch's pending figures of one job × node × hour.
func (b *Batch) addUse(k useKey, d Usage) {
	p := b.use[k]
	if p == nil {
		p = &Usage{}
		b.use[k] = p
	}
	p.Add(d)
}

// flushUse moves the batch's pending figures (samples, allocation) into
// the job hours, and their sums into the rollups and job totals: one
// statement per row touched, not per change. b.use starts empty again,
// so that a later flush (one per moveJob and the like) sees only what
// came since; b.touched keeps the keys for TouchedHours.
func (b *Batch) flushUse() error {
	use := b.use
	b.use = map[useKey]*Usage{}
	keys := make([]useKey, 0, len(use))
	for k, d := range use {
		b.touched[k] = struct{}{}
		delete(b.noHours, k.job)
		if *d != (Usage{}) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, c useKey) int {
		return cmp.Or(cmp.Compare(a.job, c.job), cmp.Compare(a.node, c.node), cmp.Compare(a.hour, c.hour))
	})
	type hourKey struct {
		dims       Dims
		node, hour int64
		model      string
	}
	// Sums in first-seen order, so that a batch always writes the same.
	var hourly usageSums[hourKey]
	var periods [3]usageSums[periodKey]
	var totals usageSums[int64]
	var hourRows [][]any
	var model string
	for i, k := range keys {
		d := *use[k]
		dims, err := b.jobDims(k.job)
		if err != nil {
			return err
		}
		// The row's model is fixed when the row is made, so that a later
		// subtraction hits the same rollup row; read once a job and node
		// (the keys are in that order), not once an hour.
		if i == 0 || k.job != keys[i-1].job || k.node != keys[i-1].node {
			if model, err = b.useModel(k.job, k.node); err != nil {
				return err
			}
		}
		hourRows = append(hourRows, d.values(k.job, k.node, k.hour))
		hourly.add(hourKey{dims, k.node, k.hour, model}, d)
		// A month row is keyed as a day row, by its first day.
		for i, at := range periodsOf(k.hour) {
			periods[i].add(periodKey{dims, at, model}, d)
		}
		totals.add(k.job, d)
	}
	// Each kind's rows at once: on PostgreSQL one statement a kind
	// (execMany); the keys above are each kind's rows' keys, distinct.
	if err := b.execMany(addUsageSQL("job_hours", "job, node_id, hour"), hourRows); err != nil {
		return err
	}
	// The node rollups take the hour rows written, in their order.
	var nodes nodeRollups
	var models modelRollups
	if err := b.execMany(rollupHourSQL(), hourly.rows(true, func(k hourKey, d Usage) []any {
		nodes.add(k.dims, k.node, k.model, k.hour, d)
		models.add(k.dims, k.model, k.hour, d)
		return rollupHourRow(k.dims, k.node, k.model, k.hour, d)
	})); err != nil {
		return err
	}
	if err := nodes.write(b); err != nil {
		return err
	}
	if err := models.write(b); err != nil {
		return err
	}
	if err := b.writePeriods(&periods, true); err != nil {
		return err
	}
	if err := b.execMany(`UPDATE jobs SET alloc_gpu_s = alloc_gpu_s + ?, used_gpu_s = used_gpu_s + ?, idle_gpu_s = idle_gpu_s + ?, energy_mj = energy_mj + ?, billing = billing + ? WHERE id = ?`, totals.rows(false, func(j int64, d Usage) []any {
		return []any{d.AllocS, d.UsedS, d.IdleS, d.EnergyMJ, d.Billing, j}
	})); err != nil {
		return err
	}
	var rows [][]any
	for k, t := range b.lastSample {
		rows = append(rows, []any{t, k[0], k[1]})
		delete(b.lastSample, k)
	}
	return b.execMany(`UPDATE job_nodes SET last_sample = max(coalesce(last_sample, 0), ?) WHERE job = ? AND node_id = ?`, rows)
}

// msPerHour is an hour in the Unix milliseconds samples are timed in.
const msPerHour = 3_600_000

// addSampleUse adds to a job's hours on node what one sample counts for
// one of its job shares: the part of the sample's window w inside the
// allocation nw, with energy delta nd, less what it counted inside old
// with od (old nil: nothing counted yet). The window is cut at hour
// boundaries, so that each hour holds only its own seconds (a 10 s
// sample at 10:59:55 gives five to 10:00 and five to 11:00): an hour's
// used and idle never pass what was allocated in it, and a period's total
// is its jobs' time clipped to it. ivMS is the sample's interval, util
// its utilization (nil: missing).
func (b *Batch) addSampleUse(job, node int64, w window, old *alloc, nw alloc, ivMS int64, util *int64, js record.JobShare, od, nd *int64) {
	if w.hi <= w.lo {
		return
	}
	add := newSampleParts(w, nw, ivMS, util, js, nd)
	var sub sampleParts
	if old != nil {
		sub = newSampleParts(w, *old, ivMS, util, js, od)
	}
	for h := w.lo / msPerHour; h*msPerHour < w.hi; h++ {
		d := add.hour(h)
		if old != nil {
			d.Add(sub.hour(h).Neg())
		}
		if d != (Usage{}) {
			b.addUse(useKey{job, node, h}, d)
		}
	}
}

// sampleParts cuts one sample's counted part (its window inside an
// allocation) into hours.
type sampleParts struct {
	part           window // the window inside the allocation
	ivMS           int64
	util           *int64
	js             record.JobShare
	delta          *int64
	ms             int64 // the whole part's length
	doneMS, doneMJ int64 // energy given to earlier hours
}

func newSampleParts(w window, a alloc, ivMS int64, util *int64, js record.JobShare, delta *int64) sampleParts {
	p := window{max(w.lo, a.lo), min(w.hi, a.hi)}
	return sampleParts{part: p, ivMS: ivMS, util: util, js: js, delta: delta, ms: max(0, p.hi-p.lo)}
}

// hour is the part's share of hour h; hours must be asked in order. The
// energy of the whole part is rounded once and handed out by running
// totals, so that the hours add up to it to the millijoule.
func (p *sampleParts) hour(h int64) Usage {
	ms := max(0, min(p.part.hi, (h+1)*msPerHour)-max(p.part.lo, h*msPerHour))
	if ms == 0 {
		return Usage{}
	}
	iv := float64(ms) / 1000
	d := Usage{SampleS: iv}
	if p.util != nil {
		d.UsedS = float64(*p.util) * iv / 100 * p.js.Share
	}
	if p.js.Idle {
		d.IdleS = iv
	}
	if p.delta != nil {
		p.doneMS += ms
		upTo := int64(float64(*p.delta)*p.js.Share*float64(p.doneMS)/float64(max(p.ivMS, 1)) + 0.5)
		d.EnergyMJ = upTo - p.doneMJ
		p.doneMJ = upTo
	}
	return d
}

// JobHour names one row of job_hours: a job run (jobs.id), a node
// (nodes.id) and a Unix hour.
type JobHour struct {
	Job, Node, Hour int64
}

// TouchedHours lists the job hours the batch changed, in key order; call
// it after Commit (the last figures are flushed then).
func (b *Batch) TouchedHours() []JobHour {
	out := make([]JobHour, 0, len(b.touched))
	for k := range b.touched {
		out = append(out, JobHour{k.job, k.node, k.hour})
	}
	slices.SortFunc(out, func(a, c JobHour) int {
		return cmp.Or(cmp.Compare(a.Job, c.Job), cmp.Compare(a.Node, c.Node), cmp.Compare(a.Hour, c.Hour))
	})
	return out
}

// periodKey keys the node-less rollups: at is the Unix hour (hour sums),
// the Unix day, or a month's first Unix day.
type periodKey struct {
	dims  Dims
	at    int64
	model string
}

// writePeriods adds the sums of each period (periodsOf's order: hour
// sums, days, months) to its rollup table; skipZero as usageSums.rows.
func (b *Batch) writePeriods(periods *[3]usageSums[periodKey], skipZero bool) error {
	for i, t := range []struct{ table, key string }{{"rollup_hourly_sum", "hour"}, {"rollup_daily", "day"}, {"rollup_monthly", "month"}} {
		if err := b.execMany(rollupPeriodSQL(t.table, t.key), periods[i].rows(skipZero, func(k periodKey, d Usage) []any {
			return rollupPeriodRow(k.dims, k.model, k.at, d)
		})); err != nil {
			return err
		}
	}
	// The zone rollups are rollup_hourly_sum's hours summed.
	return b.rollupZones(&periods[0])
}
