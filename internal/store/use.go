package store

import "sort"

// addUse adds d to the batch's pending figures of one job × node × hour.
func (b *Batch) addUse(k useKey, d Delta) {
	p := b.use[k]
	if p == nil {
		p = &Delta{}
		b.use[k] = p
	}
	p.add(d)
}

// flushUse moves the batch's pending figures (samples, allocation) into
// the job hours, and their sums into the rollups and job totals: one
// statement per row touched, not per change.
func (b *Batch) flushUse() error {
	keys := make([]useKey, 0, len(b.use))
	for k := range b.use {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if a.job != c.job {
			return a.job < c.job
		}
		if a.node != c.node {
			return a.node < c.node
		}
		return a.hour < c.hour
	})
	use := b.use
	b.use = map[useKey]*Delta{}
	type hourKey struct {
		dims       Dims
		node, hour int64
		model      string
	}
	type dayKey struct {
		dims  Dims
		day   int64
		model string
	}
	// Sums in first-seen order, so that a batch always writes the same.
	hourly, daily, monthly, totals := map[hourKey]*Delta{}, map[dayKey]*Delta{}, map[dayKey]*Delta{}, map[int64]*Delta{}
	var hours []hourKey
	var days, months []dayKey
	var jobs []int64
	for _, k := range keys {
		d := *use[k]
		if d.zero() {
			continue
		}
		dims, err := b.jobDims(k.job)
		if err != nil {
			return err
		}
		// The row's model is fixed when the row is made, so that a later
		// subtraction hits the same rollup row.
		model, err := b.nodeModel(k.node)
		if err != nil {
			return err
		}
		if _, err := b.exec(`INSERT INTO job_hours(job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(job, node_id, hour) DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,
 idle_gpu_s = idle_gpu_s + excluded.idle_gpu_s, sample_s = sample_s + excluded.sample_s,
 energy_mj = energy_mj + excluded.energy_mj, jobs = jobs + excluded.jobs`,
			k.job, k.node, k.hour, d.AllocGPUs, d.Used, d.Idle, d.SampleS, d.EnergyMJ, d.Jobs); err != nil {
			return err
		}
		hk := hourKey{dims, k.node, k.hour, model}
		if hourly[hk] == nil {
			hourly[hk] = &Delta{}
			hours = append(hours, hk)
		}
		hourly[hk].add(d)
		dk := dayKey{dims, k.hour / 24, model}
		if daily[dk] == nil {
			daily[dk] = &Delta{}
			days = append(days, dk)
		}
		daily[dk].add(d)
		// A month row is keyed as a day row, by its first day.
		mk := dayKey{dims, MonthOfDay(k.hour / 24), model}
		if monthly[mk] == nil {
			monthly[mk] = &Delta{}
			months = append(months, mk)
		}
		monthly[mk].add(d)
		if totals[k.job] == nil {
			totals[k.job] = &Delta{}
			jobs = append(jobs, k.job)
		}
		totals[k.job].add(d)
	}
	for _, k := range hours {
		if d := *hourly[k]; !d.zero() {
			if err := b.rollupHour(k.dims, k.node, k.model, k.hour, d); err != nil {
				return err
			}
		}
	}
	for _, k := range days {
		if d := *daily[k]; !d.zero() {
			if err := b.rollupDay(k.dims, k.model, k.day, d); err != nil {
				return err
			}
		}
	}
	for _, k := range months {
		if d := *monthly[k]; !d.zero() {
			if err := b.rollupMonth(k.dims, k.model, k.day, d); err != nil {
				return err
			}
		}
	}
	for _, j := range jobs {
		d := totals[j]
		if _, err := b.exec(`UPDATE jobs SET alloc_gpu_s = alloc_gpu_s + ?, used_gpu_s = used_gpu_s + ?, idle_gpu_s = idle_gpu_s + ?, energy_mj = energy_mj + ? WHERE id = ?`,
			d.AllocGPUs, d.Used, d.Idle, d.EnergyMJ, j); err != nil {
			return err
		}
	}
	for k, t := range b.lastSample {
		if _, err := b.exec(`UPDATE job_nodes SET last_sample = max(coalesce(last_sample, 0), ?) WHERE job = ? AND node_id = ?`, t, k[0], k[1]); err != nil {
			return err
		}
		delete(b.lastSample, k)
	}
	return nil
}
