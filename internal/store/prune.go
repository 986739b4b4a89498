package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PruneSamples deletes raw samples older than before, GPU by GPU (the
// primary key makes each a range delete), and returns how many went. On
// PostgreSQL the month partitions wholly before before are dropped first:
// that frees their space at once, where a delete leaves dead rows for
// vacuum.
func (b *Batch) PruneSamples(before time.Time) (int64, error) {
	var n int64
	if b.pg {
		dropped, err := b.dropSamplePartitions(before)
		if err != nil {
			return 0, err
		}
		n = dropped
	}
	rows, err := translateRows(b.tx.QueryContext(b.ctx, `SELECT id FROM gpus`))
	if err != nil {
		return 0, fmt.Errorf("list gpus: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list gpus: %w", err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("list gpus: %w", err)
	}
	for _, id := range ids {
		r, err := b.exec(`DELETE FROM samples WHERE gpu_id = ? AND t_ms < ?`, id, before.UnixMilli())
		if err != nil {
			return n, err
		}
		k, _ := r.RowsAffected()
		n += k
	}
	if n > 0 {
		return n, b.notePruned(before.UnixMilli())
	}
	return n, nil
}

// PruneIngestedFiles forgets the names of files ingested before before:
// past the archive's retention a file of that name can no longer come
// back as a duplicate.
func (b *Batch) PruneIngestedFiles(before time.Time) (int64, error) {
	r, err := b.exec(`DELETE FROM ingested_files WHERE at < ?`, before.Unix())
	if err != nil {
		return 0, fmt.Errorf("prune ingested file list: %w", err)
	}
	n, _ := r.RowsAffected()
	return n, nil
}

// samplePartitionPrefix names samples' month partitions on PostgreSQL:
// samples_YYYYMM (samples_pg.go makes them).
const samplePartitionPrefix = "samples_"

// dropSamplePartitions drops samples' month partitions that end at or
// before before and returns how many samples they held.
func (b *Batch) dropSamplePartitions(before time.Time) (int64, error) {
	rows, err := translateRows(b.tx.QueryContext(b.ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = CAST('samples' AS regclass) ORDER BY c.relname`))
	if err != nil {
		return 0, fmt.Errorf("list sample partitions: %w", err)
	}
	var old []string
	var months []time.Time
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list sample partitions: %w", translate(err))
		}
		// The default partition, or one not made by the writer, is left
		// to the per-GPU delete.
		from, err := time.Parse("200601", strings.TrimPrefix(name, samplePartitionPrefix))
		if err != nil || !strings.HasPrefix(name, samplePartitionPrefix) {
			continue
		}
		if !from.AddDate(0, 1, 0).After(before) {
			old = append(old, name)
			months = append(months, from)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("list sample partitions: %w", translate(err))
	}
	var n int64
	for i, name := range old {
		table := pgx.Identifier{name}.Sanitize()
		var k int64
		if err := b.tx.QueryRowContext(b.ctx, `SELECT count(*) FROM `+table).Scan(&k); err != nil {
			return n, fmt.Errorf("count samples in %s: %w", name, translate(err))
		}
		if _, err := b.tx.ExecContext(b.ctx, `DROP TABLE `+table); err != nil {
			return n, fmt.Errorf("drop sample partition %s: %w", name, translate(err))
		}
		// A sample of that month later in this batch makes it again.
		delete(b.samples.parts, months[i].Unix())
		n += k
	}
	return n, nil
}
