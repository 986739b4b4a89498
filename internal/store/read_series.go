package store

import (
	"context"
	"database/sql"
)

// SampleRow is one GPU sample as a job's series reads it. Nil values
// were missing.
type SampleRow struct {
	TMs, IntervalMs int64
	// Job and Restart are the sample's (first) job; Jobs, when set, is
	// the JSON list of the jobs that shared the GPU and their shares.
	Job                                      int64
	Restart                                  int
	Jobs                                     *string
	Idle                                     bool
	Util, MemUsedMiB, PowerMW, EnergyDeltaMJ *int64
}

// JobSamples calls fn, in time order, for the samples of GPU gpuID in
// [fromMs, toMs) that belong to Slurm job id job or were shared (the
// caller picks its share). The row and what it points to are reused: fn
// copies what it keeps. Rows are handed over as they are read, so memory
// does not grow with the job's length.
func (s *Ledger) JobSamples(ctx context.Context, gpuID, job, fromMs, toMs int64, fn func(*SampleRow)) error {
	var out SampleRow
	var vals [4]int64
	return s.eachSample(ctx, gpuID, fromMs, toMs, func(r *sampleRow) error {
		if j, _ := r.num(colJob); j != job && r.set&(1<<colJobs) == 0 {
			return nil
		}
		seriesRow(&out, r, &vals)
		fn(&out)
		return nil
	})
}

// seriesRow fills out from a stored sample, its values in the slots of
// vals, reused as JobSamples says.
func seriesRow(out *SampleRow, r *sampleRow, vals *[4]int64) {
	out.TMs = r.ints[colT]
	out.IntervalMs, _ = r.num(colInterval)
	out.Job, _ = r.num(colJob)
	rs, _ := r.num(colRestart)
	out.Restart = int(rs)
	idle, _ := r.num(colIdle)
	out.Idle = idle != 0
	out.Jobs = nil
	if js, ok := r.text(colJobs); ok {
		out.Jobs = &js
	}
	for i, col := range [4]int{colUtil, colMemUsed, colPower, colEnergyDelta} {
		v, ok := r.num(col)
		setInt([]**int64{&out.Util, &out.MemUsedMiB, &out.PowerMW, &out.EnergyDeltaMJ}[i], sql.NullInt64{Int64: v, Valid: ok}, &vals[i])
	}
}

// setInt points *dst at slot holding v, or sets it nil: a row's values
// live in slots reused from row to row, not in an allocation each.
func setInt(dst **int64, v sql.NullInt64, slot *int64) {
	*dst = nil
	if v.Valid {
		*slot = v.Int64
		*dst = slot
	}
}
