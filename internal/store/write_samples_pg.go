package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ensurePartition makes the month partition of samples that holds t
// (Unix ms), once per batch (samplePartitionSQL): the writer made this
// month's and the next at its start, so this makes only a late or an
// early month's. pipe, when there is one, is the batch's: its writes out
// are read first.
func (si *sampleInserter) ensurePartition(ctx context.Context, c *pgx.Conn, pipe *pipeline, tms int64) error {
	m := time.UnixMilli(tms).UTC()
	from := time.Date(m.Year(), m.Month(), 1, 0, 0, 0, 0, time.UTC)
	if si.parts[from.Unix()] {
		return nil
	}
	// A statement of its own: the connection leaves pipeline mode.
	if err := pipe.end(); err != nil {
		pipe.err = err // pipe is not nil: end of nil is nil
		return err
	}
	name, q := samplePartitionSQL(from)
	if _, err := c.Exec(ctx, q); err != nil {
		err = fmt.Errorf("insert samples: partition %s: %w", name, translate(err))
		if pipe != nil {
			pipe.err = err // the server has failed the transaction
		}
		return err
	}
	si.parts[from.Unix()] = true
	return nil
}
