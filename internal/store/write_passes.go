package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Pass is one finished ingest pass, as check and /metrics read it back.
type Pass struct {
	Started, Finished                    time.Time
	OK                                   bool
	Files, Records, Quarantined, Refused int
	// Error is the pass's error, empty when it went well.
	Error string
	// Left counts the files left in incoming; OldestLeft is the oldest of
	// them (ignored when Left is 0).
	Left       int
	OldestLeft time.Time
}

// RecordPass adds p to the pass log. It runs outside any batch (a pass
// that failed half way is still recorded), behind the writer's fence: a
// writer that lost its lock records nothing (ErrLockLost).
func (s *Ledger) RecordPass(ctx context.Context, p Pass) error {
	var perr, oldest any
	if p.Error != "" {
		perr = p.Error
	}
	if p.Left > 0 {
		oldest = p.OldestLeft.Unix()
	}
	err := s.writeTx(ctx, func(_ *sql.Conn, tx *ledgerTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO passes(started, finished, ok, files, records, quarantined, refused, error, files_left, oldest_left)
 VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.Started.Unix(), p.Finished.Unix(), p.OK, p.Files, p.Records, p.Quarantined, p.Refused, perr, p.Left, oldest)
		return translate(err)
	})
	if err != nil {
		return fmt.Errorf("record pass: %w", err)
	}
	return nil
}
