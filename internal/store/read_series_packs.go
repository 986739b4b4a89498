package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
)

// foldedMark is the time (Unix ms) before which the series buckets are
// folded into series_packs (write_series_packs.go), math.MinInt64 when
// none are.
func (s *Ledger) foldedMark(ctx context.Context) (int64, error) {
	var v sql.NullString
	if err := s.db.QueryRowContext(ctx, foldedMarkSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("series fold mark: %w", translate(err))
	}
	if s.markRead != nil {
		s.markRead()
	}
	return foldedMarkOf(v)
}

// eachPackedBucket calls fn for the folded buckets of the job run on
// GPU gpuID that start in [fromMs, toMs), in time order: a pack (a GPU's
// two hours) in memory at a time.
func (s *Ledger) eachPackedBucket(ctx context.Context, gpuID, job, restart, fromMs, toMs int64, fn func(b *seriesBucket) error) error {
	if fromMs >= toMs {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT t0_ms, data FROM series_packs
 WHERE gpu_id = ? AND t0_ms >= ? AND t0_ms < ? ORDER BY t0_ms`, gpuID, seriesPackStart(max(fromMs, 0)), toMs)
	err = eachRow(rows, err, func(r batchRows) error {
		var t0 int64
		var data []byte
		if err := r.Scan(&t0, &data); err != nil {
			return err
		}
		return decodePackRun(t0, data, job, restart, func(b *seriesBucket) error {
			if b.bucket < fromMs || b.bucket >= toMs {
				return nil
			}
			return fn(b)
		})
	})
	if err != nil {
		return fmt.Errorf("series packs of gpu %d: %w", gpuID, translate(err))
	}
	return nil
}

// eachRowBucket calls fn for the bucket rows of the job run on GPU gpuID
// that start in [fromMs, toMs), in time order: a few, at the fold mark.
func (s *Ledger) eachRowBucket(ctx context.Context, gpuID, job, restart, fromMs, toMs int64, fn func(b *seriesBucket) error) error {
	if fromMs >= toMs {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT gpu_id, job, restart, `+bucketCols+` FROM series_buckets
 WHERE gpu_id = ? AND job = ? AND restart = ? AND bucket_ms >= ? AND bucket_ms < ? ORDER BY bucket_ms`, gpuID, job, restart, fromMs, toMs)
	err = eachRow(rows, err, func(r batchRows) error {
		var b bucketRow
		if err := scanBucketRow(r, &b); err != nil {
			return err
		}
		return fn(&b.seriesBucket)
	})
	if err != nil {
		return fmt.Errorf("series buckets of gpu %d: %w", gpuID, translate(err))
	}
	return nil
}

// binSums sums buckets into bins as JobBucketBins' query does, in the
// order they come: util_share_w_ms as the engine's sum() adds REALs
// (SQLite: Kahan-Babuška-Neumaier; PostgreSQL: in turn), so that a bin
// of folded buckets equals the bin of their rows.
type binSums struct {
	kbn         bool
	out         []SampleBin
	cur         *SampleBin
	shareErr    float64
	umax, mmax  sql.NullInt64
	energy, enN int64
}

func (z *binSums) add(bin int64, b *seriesBucket) {
	if z.cur == nil || z.cur.Bin != bin {
		z.close()
		z.out = append(z.out, SampleBin{Bin: bin, FirstMs: b.first})
		z.cur = &z.out[len(z.out)-1]
	}
	c := z.cur
	c.FirstMs = min(c.FirstMs, b.first)
	c.N += b.n
	c.WindowMs += b.window
	c.IdleMs += b.idle
	c.UtilWMs += b.utilW
	c.UtilMs += b.utilMs
	if z.kbn {
		s := c.UtilShareWMs
		t := s + b.utilShareW
		if math.Abs(s) > math.Abs(b.utilShareW) {
			z.shareErr += (s - t) + b.utilShareW
		} else {
			z.shareErr += (b.utilShareW - t) + s
		}
		c.UtilShareWMs = t
	} else {
		c.UtilShareWMs += b.utilShareW
	}
	c.PowerWMs += b.powerW
	c.PowerMs += b.powerMs
	if b.haveU && (!z.umax.Valid || b.utilMax > z.umax.Int64) {
		z.umax = sql.NullInt64{Int64: b.utilMax, Valid: true}
	}
	if b.haveM && (!z.mmax.Valid || b.memMax > z.mmax.Int64) {
		z.mmax = sql.NullInt64{Int64: b.memMax, Valid: true}
	}
	z.energy += b.energy
	z.enN += b.energyN
}

// close finishes the bin being summed.
func (z *binSums) close() {
	c := z.cur
	if c == nil {
		return
	}
	c.UtilShareWMs += z.shareErr
	c.UtilMax, c.MemMax = ptrInt(z.umax), ptrInt(z.mmax)
	if z.enN > 0 {
		e := z.energy
		c.EnergyMJ = &e
	}
	z.cur, z.shareErr, z.umax, z.mmax, z.energy, z.enN = nil, 0, sql.NullInt64{}, sql.NullInt64{}, 0, 0
}

// foldedBins is JobBucketBins over [fromMs, toMs) summed here: the
// folded buckets before mark, then the rows from it.
func (s *Ledger) foldedBins(ctx context.Context, gpuID, job int64, restart int, originMs, fromMs, toMs, spanMs, mark int64) ([]SampleBin, error) {
	z := binSums{kbn: s.pg == nil}
	add := func(b *seriesBucket) error {
		z.add((b.bucket-originMs)/spanMs, b)
		return nil
	}
	if err := s.eachPackedBucket(ctx, gpuID, job, int64(restart), fromMs, min(toMs, mark), add); err != nil {
		return nil, err
	}
	if err := s.eachRowBucket(ctx, gpuID, job, int64(restart), max(fromMs, mark), toMs, add); err != nil {
		return nil, err
	}
	z.close()
	return z.out, nil
}

// packedPastEnd is the start of the first folded bucket in [fromMs,
// toMs) of the job run on GPU gpuID whose samples reach past endMs, or
// toMs when none does.
func (s *Ledger) packedPastEnd(ctx context.Context, gpuID, job int64, restart int, fromMs, toMs, endMs int64) (int64, error) {
	if fromMs >= toMs {
		return toMs, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT t0_ms, data FROM series_packs
 WHERE gpu_id = ? AND t0_ms >= ? AND t0_ms < ? AND t1_ms > ? ORDER BY t0_ms`,
		gpuID, seriesPackStart(max(fromMs, 0)), toMs, endMs)
	first := toMs
	err = eachRow(rows, err, func(r batchRows) error {
		if first != toMs {
			return nil
		}
		var t0 int64
		var data []byte
		if err := r.Scan(&t0, &data); err != nil {
			return err
		}
		return decodePackRun(t0, data, job, int64(restart), func(b *seriesBucket) error {
			if first == toMs && b.bucket >= fromMs && b.bucket < toMs && b.end > endMs {
				first = b.bucket
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("series packs of gpu %d: %w", gpuID, translate(err))
	}
	return first, nil
}

// addPackedIdle adds to g the folded buckets from fromMs (a bucket's
// start) to mark, as IdleGPUs' query counts its rows.
func (s *Ledger) addPackedIdle(ctx context.Context, g *IdleGPU, fromMs, mark int64) error {
	return s.eachPackedBucket(ctx, g.GPUID, g.JobID, int64(g.Restart), fromMs, mark, func(b *seriesBucket) error {
		g.WindowMs += b.window
		g.BusyMs += b.window - b.idle
		g.NewestMs = max(g.NewestMs, b.end)
		return nil
	})
}

// packedBusyEnd is the latest end of a folded bucket of the run with a
// busy sample, if later than best: the GPU's packs since a day before
// the run's start (Slurm's start may come after the hooks' first
// samples) by their t1_ms, newest first, each read only while it can
// hold a later end.
func (s *Ledger) packedBusyEnd(ctx context.Context, g *IdleGPU, best sql.NullInt64) (sql.NullInt64, error) {
	low := int64(math.MinInt64)
	if best.Valid {
		low = best.Int64
	}
	rows, err := s.db.QueryContext(ctx, `SELECT t0_ms, t1_ms FROM series_packs
 WHERE gpu_id = ? AND t0_ms >= ? AND t1_ms > ? ORDER BY t0_ms DESC`, g.GPUID, seriesPackStart(max(g.Start*1000-seriesFoldMs, 0)), low)
	type span struct{ t0, t1 int64 }
	spans, err := collect(rows, err, func(r batchRows, v *span) error { return r.Scan(&v.t0, &v.t1) })
	if err != nil {
		return best, fmt.Errorf("series packs of gpu %d: %w", g.GPUID, translate(err))
	}
	for _, sp := range spans {
		if best.Valid && sp.t1 <= best.Int64 {
			continue
		}
		var data []byte
		err := s.db.QueryRowContext(ctx, `SELECT data FROM series_packs WHERE gpu_id = ? AND t0_ms = ?`, g.GPUID, sp.t0).Scan(&data)
		if err != nil {
			return best, fmt.Errorf("series pack of gpu %d: %w", g.GPUID, translate(err))
		}
		err = decodePackRun(sp.t0, data, g.JobID, int64(g.Restart), func(b *seriesBucket) error {
			if b.idle < b.window && (!best.Valid || b.end > best.Int64) {
				best = sql.NullInt64{Int64: b.end, Valid: true}
			}
			return nil
		})
		if err != nil {
			return best, fmt.Errorf("series pack of gpu %d: %w", g.GPUID, err)
		}
	}
	return best, nil
}
