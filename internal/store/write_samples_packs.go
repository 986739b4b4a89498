package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The ledger stores samples packed (migration 0021): a sample_packs row
// per GPU and samplePackMs. Every write of samples goes through here, and
// every read of a GPU's window (eachSample); a read of many GPUs' packs
// by one query (NowGPUs, ForeignGPUs) decodes them with the codec too.

// packFloor is packStart of a window's lower bound, which may be
// math.MinInt64 (no bound).
func packFloor(from int64) int64 {
	if from < math.MinInt64+samplePackMs {
		return math.MinInt64
	}
	return packStart(from)
}

// packsInSQL reads the packs that may hold a GPU's samples in
// [packFloor(from), to), in time order.
const packsInSQL = `SELECT data FROM sample_packs WHERE gpu_id = ? AND t0_ms >= ? AND t0_ms < ? ORDER BY t0_ms`

// eachPackRow calls fn with each sample in [from, to) of the packs in
// rows (one data column each, of GPU gid, in time order), and closes
// rows.
func eachPackRow(rows batchRows, gid, from, to int64, fn func(r *sampleRow) error) error {
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return err
		}
		if err := eachPackedIn(data, gid, from, to, fn); err != nil {
			return err
		}
	}
	return rows.Err()
}

// eachSample calls fn with GPU gid's stored samples whose time is in
// [from, to), in time order.
func (s *Ledger) eachSample(ctx context.Context, gid, from, to int64, fn func(r *sampleRow) error) error {
	rows, err := s.db.QueryContext(ctx, packsInSQL, gid, packFloor(from), to)
	if err != nil {
		return fmt.Errorf("samples of gpu %d: %w", gid, translate(err))
	}
	if err := eachPackRow(rows, gid, from, to, fn); err != nil {
		return fmt.Errorf("samples of gpu %d: %w", gid, translate(err))
	}
	return nil
}

// eachSample is Ledger.eachSample inside the batch: it sees the batch's
// own writes.
func (b *Batch) eachSample(gid, from, to int64, fn func(r *sampleRow) error) error {
	rows, err := b.query(packsInSQL, gid, packFloor(from), to)
	if err != nil {
		return fmt.Errorf("samples of gpu %d: %w", gid, err)
	}
	if err := eachPackRow(rows, gid, from, to, fn); err != nil {
		return fmt.Errorf("samples of gpu %d: %w", gid, translate(err))
	}
	return nil
}

// sampleBefore is GPU gid's newest stored sample before t (ok false:
// none). The pack holding t may start after t's samples; the one before
// it is then whole before t, so two packs suffice.
func (b *Batch) sampleBefore(gid, t int64) (r sampleRow, ok bool, err error) {
	rows, err := b.query(`SELECT data FROM sample_packs WHERE gpu_id = ? AND t0_ms < ? ORDER BY t0_ms DESC LIMIT 2`, gid, t)
	if err != nil {
		return r, false, fmt.Errorf("samples of gpu %d: %w", gid, err)
	}
	var packs [][]byte
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			rows.Close()
			return r, false, fmt.Errorf("samples of gpu %d: %w", gid, translate(err))
		}
		packs = append(packs, slices.Clone(data))
	}
	if err := rows.Close(); err != nil {
		return r, false, err
	}
	if err := rows.Err(); err != nil {
		return r, false, fmt.Errorf("samples of gpu %d: %w", gid, translate(err))
	}
	for _, data := range packs {
		if err := eachPackedIn(data, gid, math.MinInt64, t, func(s *sampleRow) error {
			r, ok = *s, true
			return nil
		}); err != nil {
			return r, false, err
		}
		if ok {
			return r, true, nil
		}
	}
	return r, false, nil
}

// sampleFrom is GPU gid's oldest stored sample at or after t (ok false:
// none).
func (b *Batch) sampleFrom(gid, t int64) (r sampleRow, ok bool, err error) {
	rows, err := b.query(`SELECT data FROM sample_packs WHERE gpu_id = ? AND t0_ms >= ? ORDER BY t0_ms LIMIT 2`, gid, packFloor(t))
	if err != nil {
		return r, false, fmt.Errorf("samples of gpu %d: %w", gid, err)
	}
	errStop := errors.New("found")
	err = eachPackRow(rows, gid, t, math.MaxInt64, func(s *sampleRow) error {
		r, ok = *s, true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return r, false, fmt.Errorf("samples of gpu %d: %w", gid, translate(err))
	}
	return r, ok, nil
}

// insertPacks stores rows in their packs and marks the ones that were
// new: a sample whose GPU and time are stored already (or came earlier in
// rows) is left out, as an insert-or-ignore would. A pack is read from
// the ledger unless it is the GPU's one the batch wrote last (si.last).
func (si *sampleInserter) insertPacks(b *Batch, rows []sampleRow) error {
	type key struct{ gid, t0 int64 }
	groups := map[key][]int{}
	var order []key
	for i := range rows {
		r := &rows[i]
		r.isNew = false
		k := key{r.ints[colGPU], packStart(r.ints[colT])}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var part []sampleRow
	for _, k := range order {
		if b.postgres() {
			if err := si.ensurePartitionPG(b, k.t0); err != nil {
				return err
			}
		}
		var n, t1 int64
		var old []byte
		if p, ok := si.last[k.gid]; ok && p.t0 == k.t0 {
			n, t1, old = p.n, p.t1, p.data
		} else {
			row, err := b.queryRow(`SELECT n, t1_ms, data FROM sample_packs WHERE gpu_id = ? AND t0_ms = ?`, k.gid, k.t0)
			if err == nil {
				err = row.Scan(&n, &t1, &old)
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("insert samples: pack of gpu %d at %d: %w", k.gid, k.t0, err)
			}
		}
		part = part[:0]
		for _, i := range groups[k] {
			part = append(part, rows[i])
		}
		data, added, err := mergePack(old, k.gid, part)
		if err != nil {
			return fmt.Errorf("insert samples: %w", err)
		}
		more := false
		for j, i := range groups[k] {
			if !added[j] {
				continue
			}
			more = true
			rows[i].isNew = true
			r := &rows[i]
			n++
			t1 = max(t1, r.ints[colT]+r.ints[colInterval])
		}
		if !more {
			continue
		}
		if _, err := b.exec(`INSERT INTO sample_packs(gpu_id, t0_ms, n, t1_ms, data) VALUES(?, ?, ?, ?, ?)
 ON CONFLICT(gpu_id, t0_ms) DO UPDATE SET n = excluded.n, t1_ms = excluded.t1_ms, data = excluded.data`, k.gid, k.t0, n, t1, data); err != nil {
			return fmt.Errorf("insert samples: %w", err)
		}
		if si.last == nil {
			si.last = map[int64]storedPack{}
		}
		si.last[k.gid] = storedPack{t0: k.t0, n: n, t1: t1, data: data}
	}
	return nil
}

// ensurePartitionPG makes the month partition of sample_packs that holds
// t (Unix ms) on a PostgreSQL batch.
func (si *sampleInserter) ensurePartitionPG(b *Batch, t int64) error {
	if si.parts == nil {
		si.parts = map[int64]bool{}
	}
	return withPgx(b.conn, func(c *pgx.Conn) error {
		return si.ensurePartition(b.ctx, c, b.tx.pipe, t)
	})
}

// packStepBatch is how many rows of samples packSamplesStep reads at a
// time (a variable for its test).
var packStepBatch = 50000

// packSamplesStep is migration 0021's Go step: it packs the samples table
// into sample_packs, in key order and bounded batches (memory: one batch
// and one pack), and drops samples. Each batch starts after the last
// key read by a row comparison, which both engines answer from the
// primary key: an OR of gpu_id > ? and gpu_id = ? AND t_ms > ? was
// filtered from the table's start each batch on PostgreSQL.
func packSamplesStep(ctx context.Context, tx *ledgerTx) error {
	batch := packStepBatch
	parts := map[int64]bool{}
	var k *packer
	k = &packer{emit: func(gid, start int64, data []byte, n int) error {
		if tx.pg != nil {
			t := time.UnixMilli(start).UTC()
			m := int64(t.Year())*12 + int64(t.Month())
			if !parts[m] {
				name, q := samplePartitionSQL(t)
				// Raw: the statement is PostgreSQL's own spelling.
				if _, err := tx.Tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("make sample partition %s: %w", name, translate(err))
				}
				parts[m] = true
			}
		}
		t1 := k.p.t + k.p.ints[colInterval]
		if _, err := tx.ExecContext(ctx, `INSERT INTO sample_packs(gpu_id, t0_ms, n, t1_ms, data) VALUES(?, ?, ?, ?, ?)`,
			gid, start, int64(n), t1, data); err != nil {
			return fmt.Errorf("pack samples: %w", translate(err))
		}
		return nil
	}}
	lastGID, lastT := int64(math.MinInt64), int64(math.MinInt64)
	for {
		rows, err := tx.QueryContext(ctx, `SELECT `+rowSampleCols()+` FROM samples
 WHERE (gpu_id, t_ms) > (?, ?) ORDER BY gpu_id, t_ms LIMIT `+fmt.Sprint(batch), lastGID, lastT)
		if err != nil {
			return fmt.Errorf("read samples: %w", translate(err))
		}
		var got []sampleRow
		for rows.Next() {
			var r sampleRow
			if err := scanSampleRow(rows, &r); err != nil {
				rows.Close()
				return fmt.Errorf("read samples: %w", translate(err))
			}
			// The writer leaves these out when 0 (the table's default):
			// so do the packs, whose bytes then match a fresh ledger's.
			for _, col := range []int{colJob, colRestart, colIdle} {
				if v, _ := r.num(col); v == 0 {
					r.drop(col)
				}
			}
			got = append(got, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read samples: %w", translate(err))
		}
		rows.Close()
		for i := range got {
			if err := k.add(&got[i]); err != nil {
				return err
			}
		}
		if len(got) < batch {
			break
		}
		last := got[len(got)-1]
		lastGID, lastT = last.ints[colGPU], last.ints[colT]
	}
	if err := k.flush(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE samples`); err != nil {
		return fmt.Errorf("drop samples: %w", translate(err))
	}
	return nil
}

// updateSample changes GPU gid's stored sample at t by fn (its time and
// interval stay) and packs its span again.
func (b *Batch) updateSample(gid, t int64, fn func(r *sampleRow)) error {
	t0 := packStart(t)
	var all []sampleRow
	err := b.eachSample(gid, t0, t0+samplePackMs, func(r *sampleRow) error {
		all = append(all, *r)
		if r.ints[colT] == t {
			fn(&all[len(all)-1])
		}
		return nil
	})
	if err != nil {
		return err
	}
	data, _, err := mergePack(nil, gid, all)
	if err != nil {
		return fmt.Errorf("update sample of gpu %d at %d: %w", gid, t, err)
	}
	delete(b.samples.last, gid)
	if _, err := b.exec(`UPDATE sample_packs SET data = ? WHERE gpu_id = ? AND t0_ms = ?`, data, gid, t0); err != nil {
		return fmt.Errorf("update sample of gpu %d at %d: %w", gid, t, err)
	}
	return nil
}

// pruneSamples deletes GPU gid's samples before before and returns how
// many went: whole packs by their key, and the pack that straddles
// before packed again with its later samples.
func (b *Batch) pruneSamples(gid, before int64) (int64, error) {
	cut := packFloor(before)
	delete(b.samples.last, gid)
	row, err := b.queryRow(`SELECT coalesce(sum(n), 0) FROM sample_packs WHERE gpu_id = ? AND t0_ms < ?`, gid, cut)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := row.Scan(&n); err != nil {
		return 0, fmt.Errorf("prune samples of gpu %d: %w", gid, err)
	}
	if n > 0 {
		if _, err := b.exec(`DELETE FROM sample_packs WHERE gpu_id = ? AND t0_ms < ?`, gid, cut); err != nil {
			return 0, fmt.Errorf("prune samples of gpu %d: %w", gid, err)
		}
	}
	if cut == before {
		return n, nil
	}
	var keep []sampleRow
	gone := int64(0)
	err = b.eachSample(gid, cut, cut+samplePackMs, func(r *sampleRow) error {
		if r.ints[colT] < before {
			gone++
			return nil
		}
		keep = append(keep, *r)
		return nil
	})
	if err != nil || gone == 0 {
		return n, err
	}
	if len(keep) == 0 {
		_, err = b.exec(`DELETE FROM sample_packs WHERE gpu_id = ? AND t0_ms = ?`, gid, cut)
	} else {
		var data []byte
		if data, _, err = mergePack(nil, gid, keep); err == nil {
			_, err = b.exec(`UPDATE sample_packs SET n = ?, data = ? WHERE gpu_id = ? AND t0_ms = ?`, int64(len(keep)), data, gid, cut)
		}
	}
	if err != nil {
		return n, fmt.Errorf("prune samples of gpu %d: %w", gid, err)
	}
	return n + gone, nil
}

// errStopSamples ends a read of samples early from its callback.
var errStopSamples = errors.New("enough samples")
