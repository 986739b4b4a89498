package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// seriesFoldedKey is the meta key of the fold mark (Unix ms, a pack's
// start): the series buckets before it are in series_packs, those from it
// on in series_buckets. Absent, every bucket is a row.
const seriesFoldedKey = "series_folded_before"

// seriesFold is a batch's copy of the fold mark, read once.
type seriesFold struct {
	mark  int64
	known bool
}

// foldedMarkSQL reads the fold mark; foldedMarkOf parses its answer.
const foldedMarkSQL = `SELECT max(value) FROM meta WHERE key = '` + seriesFoldedKey + `'`

// foldedMarkOf is the fold mark stored as v (math.MinInt64 when none).
func foldedMarkOf(v sql.NullString) (int64, error) {
	if !v.Valid {
		return math.MinInt64, nil
	}
	t, err := strconv.ParseInt(v.String, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("meta %s: %q: %w", seriesFoldedKey, v.String, err)
	}
	return t, nil
}

// foldMark is the fold mark as the batch sees it.
func (b *Batch) foldMark() (int64, error) {
	if b.series.known {
		return b.series.mark, nil
	}
	r, err := b.queryRow(foldedMarkSQL)
	if err != nil {
		return 0, fmt.Errorf("series fold mark: %w", err)
	}
	var v sql.NullString
	if err := r.Scan(&v); err != nil {
		return 0, fmt.Errorf("series fold mark: %w", err)
	}
	m, err := foldedMarkOf(v)
	if err != nil {
		return 0, err
	}
	b.series = seriesFold{mark: m, known: true}
	return m, nil
}

// packKey names one series pack: a GPU's two hours.
type packKey struct{ gpu, t0 int64 }

// packIO is where pack reads and writes go: a batch's statements, or a
// migration's transaction.
type packIO struct {
	query func(q string, args ...any) (batchRows, error)
	exec  func(q string, args ...any) error
}

func (b *Batch) packIO() packIO {
	return packIO{query: b.query, exec: func(q string, args ...any) error {
		_, err := b.exec(q, args...)
		return err
	}}
}

func txPackIO(ctx context.Context, tx *ledgerTx) packIO {
	return packIO{
		query: func(q string, args ...any) (batchRows, error) { return translateRows(tx.QueryContext(ctx, q, args...)) },
		exec: func(q string, args ...any) error {
			_, err := tx.ExecContext(ctx, q, args...)
			return translate(err)
		},
	}
}

// read is the stored pack k's runs (none when there is no pack).
func (io packIO) read(k packKey) ([]seriesRun, error) {
	rows, err := io.query(`SELECT data FROM series_packs WHERE gpu_id = ? AND t0_ms = ?`, k.gpu, k.t0)
	var out []seriesRun
	err = eachRow(rows, err, func(r batchRows) error {
		var data []byte
		if err := r.Scan(&data); err != nil {
			return err
		}
		var err error
		out, err = decodeSeriesPackAll(k.t0, data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read series pack of gpu %d at %d: %w", k.gpu, k.t0, err)
	}
	return out, nil
}

// write stores runs as pack k (its runs left empty dropped), or deletes
// it when none has a bucket.
func (io packIO) write(k packKey, runs []seriesRun) error {
	runs = slices.DeleteFunc(runs, func(r seriesRun) bool { return len(r.buckets) == 0 })
	if len(runs) == 0 {
		return io.exec(`DELETE FROM series_packs WHERE gpu_id = ? AND t0_ms = ?`, k.gpu, k.t0)
	}
	if err := checkPackRuns(k.t0, runs); err != nil {
		return err
	}
	return io.exec(`INSERT INTO series_packs(gpu_id, t0_ms, t1_ms, data) VALUES(?, ?, ?, ?)
ON CONFLICT(gpu_id, t0_ms) DO UPDATE SET t1_ms = excluded.t1_ms, data = excluded.data`,
		k.gpu, k.t0, packEnd(runs), encodeSeriesPack(nil, k.t0, runs))
}

// addToPacks adds accs at keys (in key order; buckets before the fold
// mark: samples that came late) to their packs, each read, merged and
// written again once.
func (b *Batch) addToPacks(keys []bucketKey, accs map[bucketKey]*bucketAcc) error {
	byPack := map[packKey][]bucketKey{}
	var order []packKey
	for _, bk := range keys {
		k := packKey{bk.gpu, seriesPackStart(bk.bucket)}
		if byPack[k] == nil {
			order = append(order, k)
		}
		byPack[k] = append(byPack[k], bk)
	}
	slices.SortFunc(order, func(a, c packKey) int { return cmp.Or(cmp.Compare(a.gpu, c.gpu), cmp.Compare(a.t0, c.t0)) })
	io := b.packIO()
	for _, k := range order {
		runs, err := io.read(k)
		if err != nil {
			return err
		}
		for _, bk := range byPack[k] {
			runs = addPackBucket(runs, bk.job, bk.restart, seriesBucket{bucket: bk.bucket, bucketAcc: *accs[bk]})
		}
		if err := io.write(k, runs); err != nil {
			return fmt.Errorf("series pack of gpu %d at %d: %w", k.gpu, k.t0, err)
		}
	}
	return nil
}

// movePackEnergy moves a folded bucket's energy by dmj and its count of
// energy deltas by dn, as moveBucketEnergy does a row's.
func (b *Batch) movePackEnergy(gid, job, restart, bucket, dmj, dn int64) error {
	k := packKey{gid, seriesPackStart(bucket)}
	io := b.packIO()
	runs, err := io.read(k)
	if err != nil {
		return err
	}
	for ri := range runs {
		r := &runs[ri]
		if r.job != job || r.restart != restart {
			continue
		}
		i, found := slices.BinarySearchFunc(r.buckets, bucket, func(s seriesBucket, t int64) int { return cmp.Compare(s.bucket, t) })
		if !found {
			break
		}
		r.buckets[i].energy += dmj
		r.buckets[i].energyN += dn
		return io.write(k, runs)
	}
	return nil // as an UPDATE of no row
}

// prunePacks deletes GPU gid's folded buckets that start at or before
// last: whole packs by their key, and those of the pack that straddles
// last packed again without them. It returns how many packs went or
// changed.
func (b *Batch) prunePacks(gid, last int64) (int64, error) {
	r, err := b.execNow(`DELETE FROM series_packs WHERE gpu_id = ? AND t0_ms <= ?`, gid, last-seriesPackMs+BucketMs)
	if err != nil {
		return 0, err
	}
	n, _ := r.RowsAffected()
	k := packKey{gid, seriesPackStart(last)}
	io := b.packIO()
	runs, err := io.read(k)
	if err != nil || len(runs) == 0 {
		return n, err
	}
	cut := false
	for i := range runs {
		kept := slices.DeleteFunc(runs[i].buckets, func(x seriesBucket) bool { return x.bucket <= last })
		cut = cut || len(kept) != len(runs[i].buckets)
		runs[i].buckets = kept
	}
	if !cut {
		return n, nil
	}
	return n + 1, io.write(k, runs)
}

// foldStepBatch is how many bucket rows foldSeries reads at a time (a
// variable for its test).
var foldStepBatch = 20000

// foldMaxBuckets is how many buckets foldSeries holds before it writes
// them out (a variable for its test).
var foldMaxBuckets = 200_000

// foldSeries moves the series buckets before mark (a pack's start, after
// the mark before) from series_buckets into series_packs and returns how
// many; the caller moves the mark. It reads the rows in key order and bounded batches, each from
// the last key read, holding their packs until the GPU changes or
// foldMaxBuckets are held (memory: that many buckets): the packs are
// then written, merged with those this fold wrote for the GPU before (its
// later runs add to the packs of its earlier ones), and the GPU's rows
// before mark deleted once it is done. No other pack exists at or after
// the old mark: the writer adds to packs only before it.
func foldSeries(io packIO, mark int64) (int, error) {
	held := map[packKey][]seriesRun{}
	// written: the current GPU's packs written by this fold, the only
	// ones that may exist already (a flush before its later runs).
	written := map[packKey]bool{}
	nheld, gpu := 0, int64(math.MinInt64)
	flush := func() error {
		keys := slices.SortedFunc(maps.Keys(held), func(a, c packKey) int { return cmp.Or(cmp.Compare(a.gpu, c.gpu), cmp.Compare(a.t0, c.t0)) })
		for _, k := range keys {
			runs := held[k]
			if !written[k] {
				// A new pack: an INSERT, which fails rather than replace
				// one that should not be there.
				if err := checkPackRuns(k.t0, runs); err != nil {
					return err
				}
				if err := io.exec(`INSERT INTO series_packs(gpu_id, t0_ms, t1_ms, data) VALUES(?, ?, ?, ?)`,
					k.gpu, k.t0, packEnd(runs), encodeSeriesPack(nil, k.t0, runs)); err != nil {
					return fmt.Errorf("fold series of gpu %d at %d: %w", k.gpu, k.t0, err)
				}
				written[k] = true
				continue
			}
			stored, err := io.read(k)
			if err != nil {
				return err
			}
			for _, r := range stored {
				for _, b := range r.buckets {
					runs = addPackBucket(runs, r.job, r.restart, b)
				}
			}
			if err := io.write(k, runs); err != nil {
				return fmt.Errorf("fold series of gpu %d at %d: %w", k.gpu, k.t0, err)
			}
		}
		clear(held)
		nheld = 0
		return nil
	}
	// gpuRuns: the current GPU's runs read (in key order), whose rows
	// before mark go when it is done, a run at a time: a seek each,
	// where a delete by GPU would scan its rows of the days after.
	var gpuRuns [][2]int64
	done := func(gid int64) error {
		if err := flush(); err != nil {
			return err
		}
		clear(written)
		for _, r := range gpuRuns {
			if err := io.exec(`DELETE FROM series_buckets WHERE gpu_id = ? AND job = ? AND restart = ? AND bucket_ms < ?`, gid, r[0], r[1], mark); err != nil {
				return err
			}
		}
		gpuRuns = gpuRuns[:0]
		return nil
	}
	last := [4]int64{math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64}
	folded := 0
	for {
		rows, err := io.query(`SELECT gpu_id, job, restart, `+bucketCols+` FROM series_buckets
 WHERE (gpu_id, job, restart, bucket_ms) > (?, ?, ?, ?) AND bucket_ms < ? ORDER BY gpu_id, job, restart, bucket_ms LIMIT `+strconv.Itoa(foldStepBatch),
			last[0], last[1], last[2], last[3], mark)
		got, err := collect(rows, err, scanBucketRow)
		if err != nil {
			return 0, fmt.Errorf("fold series: %w", err)
		}
		folded += len(got)
		for _, s := range got {
			if s.gpu != gpu {
				if err := done(gpu); err != nil {
					return 0, err
				}
				gpu = s.gpu
			} else if nheld >= foldMaxBuckets {
				if err := flush(); err != nil {
					return 0, err
				}
			}
			// Rows come in time order within a run, so each run's
			// buckets are appended in order.
			k := packKey{s.gpu, seriesPackStart(s.bucket)}
			runs := held[k]
			if n := len(runs); n == 0 || runs[n-1].job != s.job || runs[n-1].restart != s.restart {
				runs = append(runs, seriesRun{job: s.job, restart: s.restart})
			}
			runs[len(runs)-1].buckets = append(runs[len(runs)-1].buckets, s.seriesBucket)
			held[k] = runs
			if n := len(gpuRuns); n == 0 || gpuRuns[n-1] != [2]int64{s.job, s.restart} {
				gpuRuns = append(gpuRuns, [2]int64{s.job, s.restart})
			}
			nheld++
		}
		if len(got) < foldStepBatch {
			break
		}
		l := got[len(got)-1]
		last = [4]int64{l.gpu, l.job, l.restart, l.bucket}
	}
	if err := done(gpu); err != nil {
		return 0, err
	}
	return folded, nil
}

// setFoldMark stores the fold mark.
func (io packIO) setFoldMark(mark int64) error {
	if err := io.exec(notePrunedSQL, seriesFoldedKey, strconv.FormatInt(mark, 10)); err != nil {
		return fmt.Errorf("series fold mark: %w", err)
	}
	return nil
}

// firstBucketFrom is the start of the first bucket row in [from, to), if
// any: a scan of the table, as a fold's.
func (io packIO) firstBucketFrom(from, to int64) (sql.NullInt64, error) {
	var first sql.NullInt64
	rows, err := io.query(`SELECT min(bucket_ms) FROM series_buckets WHERE bucket_ms >= ? AND bucket_ms < ?`, from, to)
	err = eachRow(rows, err, func(r batchRows) error { return r.Scan(&first) })
	if err != nil {
		return first, fmt.Errorf("fold series: %w", err)
	}
	return first, nil
}

// foldSeriesStep is migration 0024's Go step: it folds an old ledger's
// series buckets into packs up to the day before its newest bucket's, as
// housekeeping keeps them.
func foldSeriesStep(ctx context.Context, tx *ledgerTx) error {
	var newest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(bucket_ms) FROM series_buckets`).Scan(&newest); err != nil {
		return fmt.Errorf("fold series: %w", translate(err))
	}
	if !newest.Valid || newest.Int64 < seriesFoldMs {
		return nil
	}
	mark := foldDay(newest.Int64) - seriesFoldMs
	io := txPackIO(ctx, tx)
	n, err := foldSeries(io, mark)
	// With nothing folded the mark stays: no bucket lies between the two.
	if err != nil || n == 0 {
		return err
	}
	return io.setFoldMark(mark)
}

// foldPassBuckets is about how many buckets one housekeeping pass folds
// (a variable for its test): whole packs' spans, at least one, so that
// the writer is held a bounded time (one span of every GPU at most past
// it) and a day's fold is caught up over the passes that follow.
var foldPassBuckets = 100_000

// foldSeriesDays folds the series buckets of the days before yesterday
// (the batch's clock) into packs, a pack's span (2 hours of every GPU) at
// a time, moving the mark past each: the buckets before it are packed,
// those after it rows, at every step, so readers stay exact. It stops
// once foldPassBuckets are folded; the next pass goes on. The rows of
// today and yesterday take the writer's many small additions.
func (b *Batch) foldSeriesDays() error {
	old, err := b.foldMark()
	if err != nil {
		return err
	}
	target := foldDay(b.now.UnixMilli()) - seriesFoldMs
	if target <= old || target <= 0 {
		return nil
	}
	io := b.packIO()
	mark, folded := old, 0
	if mark == math.MinInt64 {
		// No mark yet: the fold starts at the first bucket's span, and
		// with none before target no mark is set.
		first, err := io.firstBucketFrom(mark, target)
		if err != nil || !first.Valid {
			return err
		}
		mark = seriesPackStart(first.Int64)
	}
	for mark < target && folded < foldPassBuckets {
		to := min(seriesPackStart(mark)+seriesPackMs, target)
		n, err := foldSeries(io, to)
		if err != nil {
			return err
		}
		folded, mark = folded+n, to
		if n > 0 {
			continue
		}
		// A span without buckets (no jobs, rows pruned): the mark moves
		// to the next bucket's span in one scan, not a scan a span.
		first, err := io.firstBucketFrom(to, target)
		if err != nil {
			return err
		}
		if !first.Valid {
			mark = target
			break
		}
		mark = seriesPackStart(first.Int64)
	}
	if mark == old {
		return nil
	}
	if err := io.setFoldMark(mark); err != nil {
		return err
	}
	b.series = seriesFold{mark: mark, known: true}
	return nil
}

// bucketCols are series_buckets' columns after the key, as scanBucketRow
// reads them.
const bucketCols = `bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms, power_w_ms, power_ms,
 util_max, mem_max, energy_mj, energy_n`

// bucketRow is a series_buckets row.
type bucketRow struct {
	gpu, job, restart int64
	seriesBucket
}

func scanBucketRow(r batchRows, s *bucketRow) error {
	var umax, mmax sql.NullInt64
	err := r.Scan(&s.gpu, &s.job, &s.restart, &s.bucket, &s.n, &s.first, &s.end, &s.window, &s.idle, &s.utilW, &s.utilMs, &s.utilShareW,
		&s.powerW, &s.powerMs, &umax, &mmax, &s.energy, &s.energyN)
	s.utilMax, s.haveU = umax.Int64, umax.Valid
	s.memMax, s.haveM = mmax.Int64, mmax.Valid
	return err
}
