package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// samples is partitioned by UTC month on PostgreSQL (samples_YYYYMM) and
// has no default partition: a row of a month without its partition fails
// at once rather than poisoning that month's partition later.

// samplePartitionPrefix names samples' month partitions on PostgreSQL:
// sample_packs_YYYYMM.
const samplePartitionPrefix = "sample_packs_"

// samplePartitionSQL is one statement that makes the month partition of
// samples that holds from, when it is not there yet. The partition is
// made on its own and then attached: attaching takes SHARE UPDATE
// EXCLUSIVE on samples, which readers do not wait for (CREATE TABLE …
// PARTITION OF would take ACCESS EXCLUSIVE and block every report until
// the writer's transaction ends). It is the month's name and its [first
// ms of the month, first ms of the next) range.
func samplePartitionSQL(from time.Time) (name, q string) {
	from = time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	name = samplePartitionPrefix + from.Format("200601")
	id := pgx.Identifier{name}.Sanitize()
	// The name is sample_packs_ and digits: safe inside a string literal.
	q = fmt.Sprintf(`DO $$ BEGIN
 IF to_regclass('%s') IS NULL THEN
  CREATE TABLE %s (LIKE sample_packs INCLUDING DEFAULTS);
  ALTER TABLE sample_packs ATTACH PARTITION %s FOR VALUES FROM (%d) TO (%d);
 END IF;
END $$`, id, id, id, from.UnixMilli(), to.UnixMilli())
	return name, q
}

// makeSamplePartitions makes the partitions of the months of now and the
// next, each in a statement of its own, so that the batches of these
// months find them made (a writer opening).
func (s *Ledger) makeSamplePartitions(ctx context.Context, now time.Time) error {
	now = now.UTC()
	for _, m := range []time.Time{now, time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)} {
		name, q := samplePartitionSQL(m)
		if _, err := s.db.DB.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("make sample partition %s: %w", name, translate(err))
		}
	}
	return nil
}

// partitionDropWait is how long dropping old sample partitions waits
// for the ACCESS EXCLUSIVE lock on samples that a DROP needs (behind
// running reports): every new reader of samples queues behind the
// waiting DROP, so it is short, and past it the drop is left for later.
const partitionDropWait = time.Second

// partitionDropRetry is how long DropSamplePartitions waits after a drop
// that timed out before it tries again: months are dropped once a month,
// and each try may stall the dashboard's readers for partitionDropWait.
const partitionDropRetry = time.Hour

// DropSamplePartitions drops samples' month partitions that lie wholly
// before before and returns how many samples they held. That frees their
// space at once, where a delete leaves dead rows for vacuum. It runs in a
// short transaction of its own, outside any batch (it must not be called
// while one is open: it waits for the writer's connection), so that
// samples is locked only for the drops: a drop that waits longer than
// partitionDropWait fails with ErrBusy, and the calls of the next
// partitionDropRetry do nothing (0, nil); Batch.PruneSamples deletes the
// rows of months not dropped. On SQLite there are no partitions: 0.
func (s *Ledger) DropSamplePartitions(ctx context.Context, before time.Time) (int64, error) {
	if s.pg == nil {
		return 0, nil
	}
	if s.pg.turn == nil {
		return 0, errors.New("drop sample partitions: the store is open read-only")
	}
	give, err := s.fenceOpen(ctx)
	if err != nil {
		return 0, fmt.Errorf("drop sample partitions: %w", err)
	}
	defer give()
	now := s.pg.now()
	if now.Before(s.pg.dropAgain) {
		return 0, nil
	}
	n, err := s.dropSamplePartitions(ctx, before)
	if errors.Is(err, ErrBusy) {
		s.pg.dropAgain = now.Add(partitionDropRetry)
	}
	return n, err
}

// dropSamplePartitions is DropSamplePartitions with the writer's turn.
func (s *Ledger) dropSamplePartitions(ctx context.Context, before time.Time) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("drop sample partitions: %w", translate(err))
	}
	defer tx.Rollback()
	if err := s.fenceCheck(ctx, tx); err != nil {
		return 0, fmt.Errorf("drop sample partitions: %w", err)
	}
	if _, err := tx.Tx.ExecContext(ctx, `SET LOCAL lock_timeout = `+strconv.FormatInt(partitionDropWait.Milliseconds(), 10)); err != nil {
		return 0, fmt.Errorf("drop sample partitions: %w", translate(err))
	}
	old, err := oldSamplePartitions(ctx, tx, before)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range old {
		table := pgx.Identifier{name}.Sanitize()
		// An emptied month (pruned by the batch) is not counted: the
		// count reads the whole month's partition.
		var k int64
		if err := tx.Tx.QueryRowContext(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM `+table+`) THEN (SELECT sum(n) FROM `+table+`) ELSE 0 END`).Scan(&k); err != nil {
			return 0, fmt.Errorf("count samples in %s: %w", name, translate(err))
		}
		if _, err := tx.Tx.ExecContext(ctx, `DROP TABLE `+table); err != nil {
			return 0, fmt.Errorf("drop sample partition %s: %w", name, translate(err))
		}
		n += k
	}
	if n > 0 {
		if _, err := tx.ExecContext(ctx, notePrunedSQL, prunedKey, strconv.FormatInt(before.UnixMilli(), 10)); err != nil {
			return 0, fmt.Errorf("drop sample partitions: note: %w", translate(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("drop sample partitions: commit: %w", translate(err))
	}
	return n, nil
}

// oldSamplePartitions lists samples' month partitions that end at or
// before before; a partition not named by the writer is left to the
// per-GPU delete.
func oldSamplePartitions(ctx context.Context, tx *ledgerTx, before time.Time) ([]string, error) {
	rows, err := translateRows(tx.Tx.QueryContext(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = CAST('sample_packs' AS regclass) ORDER BY c.relname`))
	var old []string
	err = eachRow(rows, err, func(r batchRows) error {
		var name string
		if err := r.Scan(&name); err != nil {
			return err
		}
		from, err := time.Parse("200601", strings.TrimPrefix(name, samplePartitionPrefix))
		if err == nil && strings.HasPrefix(name, samplePartitionPrefix) && !from.AddDate(0, 1, 0).After(before) {
			old = append(old, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list sample partitions: %w", err)
	}
	return old, nil
}
