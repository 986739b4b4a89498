package store

import (
	"fmt"
	"time"
)

// PruneSamples deletes raw samples older than before, GPU by GPU (the
// primary key makes each a range delete), and the series buckets folded
// from them (PruneSamplesKeepSeries), and returns how many samples went.
// On PostgreSQL, Ledger.DropSamplePartitions, run before this batch,
// drops the months wholly before before; this deletes the rest: the older
// rows of the month before falls in, and those of any month whose drop
// was left for the next pass.
func (b *Batch) PruneSamples(before time.Time) (int64, error) {
	return b.PruneSamplesKeepSeries(before, before)
}

// PruneSamplesKeepSeries is PruneSamples that keeps the series buckets
// (a job's mean, peak and idle share per 5 minutes) until seriesBefore,
// at most before: the job pages of the time between read their series
// from the buckets alone (Ledger.PrunedBefore), for about a twentieth of
// the samples' bytes.
func (b *Batch) PruneSamplesKeepSeries(before, seriesBefore time.Time) (int64, error) {
	if seriesBefore.After(before) {
		return 0, fmt.Errorf("prune samples before %s: series kept only until %s, after them", before.UTC().Format(time.RFC3339), seriesBefore.UTC().Format(time.RFC3339))
	}
	// Fold first: the prune below then finds each bucket in one place.
	if err := b.foldSeriesDays(); err != nil {
		return 0, err
	}
	var n, nb int64
	rows, err := translateRows(b.tx.QueryContext(b.ctx, `SELECT id FROM gpus`))
	ids, err := collect(rows, err, func(r batchRows, id *int64) error { return r.Scan(id) })
	if err != nil {
		return 0, fmt.Errorf("list gpus: %w", err)
	}
	for _, id := range ids {
		k, err := b.pruneSamples(id, before.UnixMilli())
		if err != nil {
			return n, err
		}
		n += k
		k, err = b.pruneBuckets(id, seriesBefore.UnixMilli())
		if err != nil {
			return n, err
		}
		nb += k
	}
	if n > 0 {
		if err := b.notePruned(before.UnixMilli()); err != nil {
			return n, err
		}
	}
	// Pruned together, the samples' mark (moved here or by a dropped
	// month) stands for the buckets too, as before series were kept.
	if seriesBefore.Equal(before) {
		if _, err := b.exec(`DELETE FROM meta WHERE key = ?`, seriesPrunedKey); err != nil {
			return n, fmt.Errorf("series pruned mark: %w", err)
		}
		return n, nil
	}
	if n > 0 || nb > 0 {
		return n, b.noteSeriesPruned(seriesBefore.UnixMilli())
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
