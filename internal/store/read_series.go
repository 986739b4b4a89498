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
	rows, err := s.db.QueryContext(ctx, `SELECT t_ms, interval_ms, job, restart, jobs, idle, util, mem_used_mib, power_mw, energy_delta_mj
 FROM samples WHERE gpu_id = ? AND t_ms >= ? AND t_ms < ? AND (job = ? OR jobs IS NOT NULL) ORDER BY t_ms`, gpuID, fromMs, toMs, job)
	if err != nil {
		return translate(err)
	}
	return scanSamples(rows, fn)
}

// scanSamples hands fn each row of a query of SampleRow's columns (t_ms,
// interval_ms, job, restart, jobs, idle, util, mem_used_mib, power_mw,
// energy_delta_mj), reusing the row as JobSamples says, and closes rows.
func scanSamples(rows *sql.Rows, fn func(*SampleRow)) error {
	defer rows.Close()
	var r SampleRow
	var jobs sql.NullString
	var util, mem, power, energy sql.NullInt64
	var vals [4]int64
	for rows.Next() {
		if err := rows.Scan(&r.TMs, &r.IntervalMs, &r.Job, &r.Restart, &jobs, &r.Idle, &util, &mem, &power, &energy); err != nil {
			return translate(err)
		}
		r.Jobs = nil
		if jobs.Valid {
			r.Jobs = &jobs.String
		}
		setInt(&r.Util, util, &vals[0])
		setInt(&r.MemUsedMiB, mem, &vals[1])
		setInt(&r.PowerMW, power, &vals[2])
		setInt(&r.EnergyDeltaMJ, energy, &vals[3])
		fn(&r)
	}
	return translate(rows.Err())
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
