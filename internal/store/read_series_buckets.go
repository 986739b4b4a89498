package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
)

// JobBucketBins sums, per stretch of spanMs from originMs, the series
// buckets (BucketMs of samples, kept by the writer) of Slurm job id job's
// run restart on GPU gpuID that start in [fromMs, toMs): its own samples
// and its shares of shared ones, windows uncut. originMs, fromMs, toMs
// and spanMs are multiples of BucketMs, so that a bucket lies in one
// stretch. The caller reads from the samples what the buckets cannot
// answer: the edges of its window, buckets before the pruned mark
// (PrunedBefore) and those reaching past the job's end (BucketPastEnd).
// The answer has at most (toMs-originMs)/spanMs+1 rows.
func (s *Ledger) JobBucketBins(ctx context.Context, gpuID, job int64, restart int, originMs, fromMs, toMs, spanMs int64) (out []SampleBin, err error) {
	err = s.ReadSnapshot(ctx, func(r *Ledger) error {
		out, err = r.jobBucketBins(ctx, gpuID, job, restart, originMs, fromMs, toMs, spanMs)
		return err
	})
	return out, err
}

func (s *Ledger) jobBucketBins(ctx context.Context, gpuID, job int64, restart int, originMs, fromMs, toMs, spanMs int64) ([]SampleBin, error) {
	if originMs%BucketMs != 0 || fromMs%BucketMs != 0 || toMs%BucketMs != 0 || spanMs%BucketMs != 0 || spanMs <= 0 {
		return nil, fmt.Errorf("series buckets of gpu %d: %d, %d, %d, %d not whole buckets", gpuID, originMs, fromMs, toMs, spanMs)
	}
	// Before the fold mark the buckets are packed: those bins, and the
	// one the mark falls in, are summed here from the packs and rows in
	// time order; the bins after it by the query, as before.
	mark, err := s.foldedMark(ctx)
	if err != nil {
		return nil, err
	}
	var head []SampleBin
	if fromMs < mark {
		split := min(toMs, originMs+(mark-originMs+spanMs-1)/spanMs*spanMs)
		if head, err = s.foldedBins(ctx, gpuID, job, restart, originMs, fromMs, split, spanMs, mark); err != nil {
			return nil, err
		}
		if fromMs = split; fromMs >= toMs {
			return head, nil
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT (bucket_ms - ?1) / ?2 AS bin, min(first_ms), CAST(sum(n) AS INTEGER), CAST(sum(window_ms) AS INTEGER),
 CAST(sum(idle_ms) AS INTEGER), CAST(sum(util_w_ms) AS INTEGER), CAST(sum(util_ms) AS INTEGER), CAST(sum(util_share_w_ms) AS REAL),
 CAST(sum(power_w_ms) AS INTEGER), CAST(sum(power_ms) AS INTEGER), max(util_max), max(mem_max), CAST(sum(energy_mj) AS INTEGER),
 CAST(sum(energy_n) AS INTEGER)
 FROM series_buckets WHERE gpu_id = ?3 AND job = ?4 AND restart = ?5 AND bucket_ms >= ?6 AND bucket_ms < ?7
 GROUP BY bin ORDER BY bin`, originMs, spanMs, gpuID, job, restart, fromMs, toMs)
	out, err := collect(rows, err, func(r batchRows, b *SampleBin) error {
		var utilMax, memMax sql.NullInt64
		var energy, energyN int64
		err := r.Scan(&b.Bin, &b.FirstMs, &b.N, &b.WindowMs, &b.IdleMs, &b.UtilWMs, &b.UtilMs, &b.UtilShareWMs, &b.PowerWMs, &b.PowerMs,
			&utilMax, &memMax, &energy, &energyN)
		b.UtilMax, b.MemMax = ptrInt(utilMax), ptrInt(memMax)
		if energyN > 0 {
			b.EnergyMJ = &energy
		}
		return err
	})
	if head != nil {
		out = append(head, out...)
	}
	return out, translate(err)
}

// BucketPastEnd is the start of the first bucket in [fromMs, toMs) of
// the job run on GPU gpuID that holds a sample reaching past endMs (its
// windows there are cut, which a bucket's sums cannot be), or toMs when
// none does. A bucket whose samples were pruned (series kept longer,
// store.series_retention) is not one: the samples cannot answer for it.
func (s *Ledger) BucketPastEnd(ctx context.Context, gpuID, job int64, restart int, fromMs, toMs, endMs int64) (first int64, err error) {
	err = s.ReadSnapshot(ctx, func(r *Ledger) error {
		first, err = r.bucketPastEnd(ctx, gpuID, job, restart, fromMs, toMs, endMs)
		return err
	})
	return first, err
}

func (s *Ledger) bucketPastEnd(ctx context.Context, gpuID, job int64, restart int, fromMs, toMs, endMs int64) (int64, error) {
	m, err := s.pruneMarks(ctx)
	if err != nil {
		return 0, err
	}
	// The folded buckets come before the rows: a past end among them is
	// the first.
	fold, err := s.foldedMark(ctx)
	if err != nil {
		return 0, err
	}
	lo := max(fromMs, m.samples)
	if lo < fold {
		p, err := s.packedPastEnd(ctx, gpuID, job, restart, lo, min(toMs, fold), endMs)
		if err != nil || p < min(toMs, fold) {
			return p, err
		}
		lo = fold
	}
	var first sql.NullInt64
	err = s.db.QueryRowContext(ctx, `SELECT min(bucket_ms) FROM series_buckets
 WHERE gpu_id = ? AND job = ? AND restart = ? AND bucket_ms >= ? AND bucket_ms < ? AND end_ms > ?`,
		gpuID, job, restart, lo, toMs, endMs).Scan(&first)
	if err != nil {
		return 0, translate(err)
	}
	if !first.Valid {
		return toMs, nil
	}
	return first.Int64, nil
}

// PrunedBefore is the time (Unix ms) before which series buckets were
// pruned (Batch.PruneSamples, with the samples unless the series are kept
// longer), math.MinInt64 when none were: a bucket that starts before it
// may lack the sums of samples gone.
func (s *Ledger) PrunedBefore(ctx context.Context) (int64, error) {
	m, err := s.pruneMarks(ctx)
	return m.series, err
}

// pruneMarks are the times (Unix ms) before which samples and series
// buckets were pruned, math.MinInt64 where nothing was.
type pruneMarks struct{ samples, series int64 }

// folded tells whether the buckets of [fromMs, toMs) hold sums of
// samples already pruned: the series kept longer than the samples.
func (m pruneMarks) folded(fromMs, toMs int64) bool {
	return m.series < m.samples && fromMs < m.samples && toMs > m.series
}

func (s *Ledger) pruneMarks(ctx context.Context) (pruneMarks, error) {
	m := pruneMarks{samples: math.MinInt64, series: math.MinInt64}
	rows, err := s.db.QueryContext(ctx, `SELECT key, value FROM meta WHERE key IN (?, ?)`, prunedKey, seriesPrunedKey)
	if err != nil {
		return m, translate(err)
	}
	defer rows.Close()
	seen := false
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return m, translate(err)
		}
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return m, fmt.Errorf("meta %s: %q: %w", k, v, err)
		}
		if k == prunedKey {
			m.samples = t
		} else {
			m.series, seen = t, true
		}
	}
	if err := rows.Err(); err != nil {
		return m, translate(err)
	}
	// A ledger pruned before the series had a mark of their own pruned
	// them with the samples.
	if !seen {
		m.series = m.samples
	}
	return m, nil
}
