package store

import (
	"fmt"
	"time"
)

// PruneSamples deletes raw samples older than before, GPU by GPU (the
// primary key makes each a range delete), and returns how many went. On
// PostgreSQL, Ledger.DropSamplePartitions, run before this batch, drops
// the months wholly before before; this deletes the rest: the older rows
// of the month before falls in, and those of any month whose drop was
// left for the next pass.
func (b *Batch) PruneSamples(before time.Time) (int64, error) {
	var n int64
	rows, err := translateRows(b.tx.QueryContext(b.ctx, `SELECT id FROM gpus`))
	ids, err := collect(rows, err, func(r batchRows, id *int64) error { return r.Scan(id) })
	if err != nil {
		return 0, fmt.Errorf("list gpus: %w", err)
	}
	for _, id := range ids {
		r, err := b.execNow(`DELETE FROM samples WHERE gpu_id = ? AND t_ms < ?`, id, before.UnixMilli())
		if err != nil {
			return n, err
		}
		k, _ := r.RowsAffected()
		n += k
		if err := b.pruneBuckets(id, before.UnixMilli()); err != nil {
			return n, err
		}
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
	r, err := b.execNow(`DELETE FROM ingested_files WHERE at < ?`, before.Unix())
	if err != nil {
		return 0, fmt.Errorf("prune ingested file list: %w", err)
	}
	n, _ := r.RowsAffected()
	return n, nil
}
