package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/aicloud/gpusuite/internal/record"
)

// BucketMs is the span of a series bucket (series_buckets, migration
// 0014): a job run's samples on one GPU summed per 5 minutes, so that the
// series of a long job reads a few thousand rows, not every sample.
const BucketMs = 300_000

// bucketStart is the start of the bucket that holds t (Unix ms, t ≥ 0).
func bucketStart(t int64) int64 { return t - t%BucketMs }

type bucketKey struct {
	gpu, job, restart, bucket int64
}

// bucketAcc is one bucket's part from one segment's new samples.
type bucketAcc struct {
	n, first, end   int64
	window, idle    int64
	utilW, utilMs   int64
	utilShareW      float64
	powerW, powerMs int64
	utilMax, memMax int64
	haveU, haveM    bool
	energy, energyN int64
}

// addBucketSample adds one new sample to its jobs' buckets in accs: a
// sample of one job whole (its row has no jobs list) with share 1, a
// shared one with each job's share, as the series of a job counts it.
func addBucketSample(accs map[bucketKey]*bucketAcc, gid, tms, iv int64, s *record.Sample, delta *int64) {
	// A sample stored without a jobs list has one share of 1.
	for _, js := range s.Jobs {
		if js.Job == 0 || js.Share == 0 {
			continue
		}
		k := bucketKey{gid, int64(js.Job), int64(js.Restart), bucketStart(tms)}
		a := accs[k]
		if a == nil {
			a = &bucketAcc{first: tms, end: tms + iv}
			accs[k] = a
		}
		a.n++
		a.first, a.end = min(a.first, tms), max(a.end, tms+iv)
		a.window += iv
		if js.Idle {
			a.idle += iv
		}
		if s.GPUUtil != nil {
			u := int64(*s.GPUUtil)
			a.utilW += u * iv
			a.utilMs += iv
			a.utilShareW += float64(u*iv) * js.Share
			a.utilMax, a.haveU = max(a.utilMax, u), true
		}
		if s.MemUsedMiB != nil {
			a.memMax, a.haveM = max(a.memMax, int64(*s.MemUsedMiB)), true
		}
		if s.PowerMW != nil {
			a.powerW += int64(*s.PowerMW) * iv
			a.powerMs += iv
		}
		if delta != nil {
			a.energy += shareOf(*delta, js.Share)
			a.energyN++
		}
	}
}

// shareOf is a job's part of an energy delta, as its series counts it.
func shareOf(mj int64, share float64) int64 {
	if share == 1 {
		return mj
	}
	return int64(float64(mj) * share)
}

const upsertBucketSQL = `INSERT INTO series_buckets(gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms,
 util_w_ms, util_ms, util_share_w_ms, power_w_ms, power_ms, util_max, mem_max, energy_mj, energy_n)
 VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(gpu_id, job, restart, bucket_ms) DO UPDATE SET n = series_buckets.n + excluded.n,
 first_ms = min(series_buckets.first_ms, excluded.first_ms), end_ms = max(series_buckets.end_ms, excluded.end_ms),
 window_ms = series_buckets.window_ms + excluded.window_ms, idle_ms = series_buckets.idle_ms + excluded.idle_ms,
 util_w_ms = series_buckets.util_w_ms + excluded.util_w_ms, util_ms = series_buckets.util_ms + excluded.util_ms,
 util_share_w_ms = series_buckets.util_share_w_ms + excluded.util_share_w_ms,
 power_w_ms = series_buckets.power_w_ms + excluded.power_w_ms, power_ms = series_buckets.power_ms + excluded.power_ms,
 util_max = CASE WHEN excluded.util_max > coalesce(series_buckets.util_max, -1) THEN excluded.util_max ELSE series_buckets.util_max END,
 mem_max = CASE WHEN excluded.mem_max > coalesce(series_buckets.mem_max, -1) THEN excluded.mem_max ELSE series_buckets.mem_max END,
 energy_mj = series_buckets.energy_mj + excluded.energy_mj, energy_n = series_buckets.energy_n + excluded.energy_n`

// writeBuckets adds accs to the stored buckets, in key order (one
// statement over arrays on PostgreSQL: the keys differ).
func (b *Batch) writeBuckets(accs map[bucketKey]*bucketAcc) error {
	if len(accs) == 0 {
		return nil
	}
	keys := make([]bucketKey, 0, len(accs))
	for k := range accs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, c bucketKey) int {
		return cmp.Or(cmp.Compare(a.gpu, c.gpu), cmp.Compare(a.job, c.job), cmp.Compare(a.restart, c.restart), cmp.Compare(a.bucket, c.bucket))
	})
	// Buckets before the fold mark (samples that came late) go to their
	// packs, the rest to rows.
	mark, err := b.foldMark()
	if err != nil {
		return err
	}
	var late []bucketKey
	if mark != math.MinInt64 {
		keys = slices.DeleteFunc(keys, func(k bucketKey) bool {
			if k.bucket < mark {
				late = append(late, k)
				return true
			}
			return false
		})
	}
	if err := b.addToPacks(late, accs); err != nil {
		return fmt.Errorf("series buckets: %w", err)
	}
	if len(keys) == 0 {
		return nil
	}
	if err := b.execMany(upsertBucketSQL, bucketRows(keys, accs)); err != nil {
		return fmt.Errorf("series buckets: %w", err)
	}
	return nil
}

// bucketRows are upsertBucketSQL's rows of accs, in the order of keys.
func bucketRows(keys []bucketKey, accs map[bucketKey]*bucketAcc) [][]any {
	rows := make([][]any, 0, len(keys))
	for _, k := range keys {
		a := accs[k]
		var umax, mmax any
		if a.haveU {
			umax = a.utilMax
		}
		if a.haveM {
			mmax = a.memMax
		}
		rows = append(rows, []any{k.gpu, k.job, k.restart, k.bucket, a.n, a.first, a.end, a.window, a.idle,
			a.utilW, a.utilMs, a.utilShareW, a.powerW, a.powerMs, umax, mmax, a.energy, a.energyN})
	}
	return rows
}

// moveBucketEnergy moves the stored sample s's energy delta in its jobs'
// buckets from od to nd (redoDelta took it again).
func (b *Batch) moveBucketEnergy(gid int64, s *storedSample, od, nd *int64) error {
	shares, err := s.shares()
	if err != nil {
		return err
	}
	mark, err := b.foldMark()
	if err != nil {
		return err
	}
	for _, js := range shares {
		if js.Job == 0 || js.Share == 0 {
			continue
		}
		var dmj, dn int64
		if od != nil {
			dmj, dn = dmj-shareOf(*od, js.Share), dn-1
		}
		if nd != nil {
			dmj, dn = dmj+shareOf(*nd, js.Share), dn+1
		}
		if bucketStart(s.t) < mark {
			if err := b.movePackEnergy(gid, int64(js.Job), int64(js.Restart), bucketStart(s.t), dmj, dn); err != nil {
				return fmt.Errorf("series buckets: %w", err)
			}
			continue
		}
		if _, err := b.exec(`UPDATE series_buckets SET energy_mj = energy_mj + ?, energy_n = energy_n + ?
 WHERE gpu_id = ? AND job = ? AND restart = ? AND bucket_ms = ?`, dmj, dn, gid, int64(js.Job), int64(js.Restart), bucketStart(s.t)); err != nil {
			return fmt.Errorf("series buckets: %w", err)
		}
	}
	return nil
}

// pruneBuckets deletes GPU gid's buckets wholly before before (Unix ms),
// rows and folded, and returns how many rows and packs went or changed.
// One that straddles it stays until the next prune: readers use no
// bucket that starts before the pruned mark (Ledger.PrunedBefore).
func (b *Batch) pruneBuckets(gid, before int64) (int64, error) {
	r, err := b.exec(`DELETE FROM series_buckets WHERE gpu_id = ? AND bucket_ms <= ?`, gid, before-BucketMs)
	if err != nil {
		return 0, fmt.Errorf("prune series buckets: %w", err)
	}
	n, _ := r.RowsAffected()
	if mark, err := b.foldMark(); err != nil || mark == math.MinInt64 {
		return n, err
	}
	k, err := b.prunePacks(gid, before-BucketMs)
	if err != nil {
		return n, fmt.Errorf("prune series packs: %w", err)
	}
	return n + k, nil
}

// seriesPrunedKey is the meta key of the time (Unix ms) before which
// series buckets were pruned; absent, they went with the samples
// (prunedKey).
const seriesPrunedKey = "series_pruned_before"

// noteSeriesPruned records that series buckets before t (Unix ms) are
// gone.
func (b *Batch) noteSeriesPruned(t int64) error {
	_, err := b.exec(notePrunedSQL, seriesPrunedKey, strconv.FormatInt(t, 10))
	return err
}

// RebuildSeriesBuckets computes every series bucket again from the stored
// samples, as the writer adds them, in one transaction: for samples
// written by something other than the writer, such as a test fixture.
// Writer only; it holds every bucket in memory (fixtures' sizes).
func (s *Ledger) RebuildSeriesBuckets(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT gpu_id FROM sample_packs ORDER BY gpu_id`)
	gids, err := collect(rows, err, func(r batchRows, id *int64) error { return r.Scan(id) })
	if err != nil {
		return fmt.Errorf("rebuild series buckets: %w", translate(err))
	}
	accs := map[bucketKey]*bucketAcc{}
	for _, gid := range gids {
		err := s.eachSample(ctx, gid, math.MinInt64, math.MaxInt64, func(r *sampleRow) error {
			st := storedOf(r, 0)
			shares, err := st.shares()
			if err != nil {
				return err
			}
			var smp record.Sample
			smp.Jobs = shares
			if st.util.Valid {
				u := uint32(st.util.Int64)
				smp.GPUUtil = &u
			}
			if m, ok := r.num(colMemUsed); ok {
				v := uint64(m)
				smp.MemUsedMiB = &v
			}
			if st.power.Valid {
				p := uint32(st.power.Int64)
				smp.PowerMW = &p
			}
			addBucketSample(accs, gid, st.t, st.iv, &smp, st.energy())
			return nil
		})
		if err != nil {
			return fmt.Errorf("rebuild series buckets: %w", err)
		}
	}
	keys := slices.SortedFunc(maps.Keys(accs), func(a, c bucketKey) int {
		return cmp.Or(cmp.Compare(a.gpu, c.gpu), cmp.Compare(a.job, c.job), cmp.Compare(a.restart, c.restart), cmp.Compare(a.bucket, c.bucket))
	})
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("rebuild series buckets: %w", translate(err))
	}
	defer tx.Rollback()
	// Every bucket a row again, from the samples: no packs, no mark.
	for _, q := range []string{`DELETE FROM series_buckets`, `DELETE FROM series_packs`, `DELETE FROM meta WHERE key = '` + seriesFoldedKey + `'`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("rebuild series buckets: %w", translate(err))
		}
	}
	for _, row := range bucketRows(keys, accs) {
		if _, err := tx.ExecContext(ctx, upsertBucketSQL, row...); err != nil {
			return fmt.Errorf("rebuild series buckets: %w", translate(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("rebuild series buckets: %w", translate(err))
	}
	return nil
}
