package store

import (
	"context"
	"database/sql"
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
	rows, err := s.db.QueryContext(ctx, `SELECT (t_ms - ?8) / ?2 AS bin, min(t_ms), count(*), CAST(sum(w) AS INTEGER), CAST(sum(w * idle) AS INTEGER),
 CAST(coalesce(sum(util * w), 0) AS INTEGER), CAST(coalesce(sum(w + 0 * util), 0) AS INTEGER),
 CAST(coalesce(sum(power_mw * w), 0) AS INTEGER), CAST(coalesce(sum(w + 0 * power_mw), 0) AS INTEGER),
 max(util), max(mem_used_mib), CAST(sum(energy_delta_mj) AS INTEGER)
 FROM (SELECT t_ms, min(interval_ms, ?3 - t_ms) AS w, idle, util, mem_used_mib, power_mw, energy_delta_mj FROM samples
  WHERE gpu_id = ?4 AND t_ms >= ?1 AND t_ms < ?5 AND job = ?6 AND restart = ?7 AND jobs IS NULL) AS s
 GROUP BY bin ORDER BY bin`, fromMs, spanMs, allocEndMs, gpuID, toMs, job, restart, originMs)
	out, err := collect(rows, err, func(r batchRows, b *SampleBin) error {
		var utilMax, memMax, energy sql.NullInt64
		err := r.Scan(&b.Bin, &b.FirstMs, &b.N, &b.WindowMs, &b.IdleMs, &b.UtilWMs, &b.UtilMs, &b.PowerWMs, &b.PowerMs,
			&utilMax, &memMax, &energy)
		b.UtilShareWMs = float64(b.UtilWMs)
		b.UtilMax, b.MemMax, b.EnergyMJ = ptrInt(utilMax), ptrInt(memMax), ptrInt(energy)
		return err
	})
	return out, translate(err)
}

// JobShared calls fn, in time order, for the samples of GPU gpuID in
// [fromMs, toMs) that carry a jobs list (shared with other jobs, or
// partly outside one): JobSampleBins leaves them to the caller, who picks
// its job's share. The row is reused as in JobSamples.
func (s *Ledger) JobShared(ctx context.Context, gpuID, fromMs, toMs int64, fn func(*SampleRow)) error {
	rows, err := s.db.QueryContext(ctx, `SELECT t_ms, interval_ms, job, restart, jobs, idle, util, mem_used_mib, power_mw, energy_delta_mj
 FROM samples WHERE gpu_id = ? AND t_ms >= ? AND t_ms < ? AND jobs IS NOT NULL ORDER BY t_ms`, gpuID, fromMs, toMs)
	if err != nil {
		return translate(err)
	}
	return scanSamples(rows, fn)
}

// GPUSamplesAtLeast reports whether GPU gpuID has at least n samples in
// [fromMs, toMs), reading no more than n of them; also when the window
// reaches into samples pruned while their series buckets are kept
// (store.series_retention), which then stand for them.
func (s *Ledger) GPUSamplesAtLeast(ctx context.Context, gpuID, fromMs, toMs int64, n int) (bool, error) {
	var got int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM samples WHERE gpu_id = ? AND t_ms >= ? AND t_ms < ? LIMIT ?) AS s`,
		gpuID, fromMs, toMs, n).Scan(&got)
	if err != nil {
		return false, translate(err)
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
