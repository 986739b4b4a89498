package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ReadSnapshot runs fn with a view of s whose statements all run in one
// read transaction, so that they see the ledger as one commit left it: a
// report that reads a span and then its edge hours in two statements
// cannot see a pass that lands between them (its rows counted once and
// taken away twice). fn reads only through r, and only while it runs.
//
// SQLite: a deferred BEGIN on one of the reader's connections; in WAL the
// first read fixes the snapshot and the writer goes on committing. In
// DELETE mode (a ledger on NFS) the transaction holds the SHARED lock
// from its first read to its end, so a batch's commit waits for the
// report, up to store.busy_timeout: the report's own timeout (ctx)
// bounds how long that is. On a writer's pool (one connection, BEGIN
// IMMEDIATE) it would hold the write lock: reports open read-only.
// PostgreSQL: REPEATABLE READ, READ ONLY, which a hot standby allows.
// Called on a view that reads a snapshot already, fn runs on that view:
// a report's reads and the series reads inside it see the same commits.
func (s *Ledger) ReadSnapshot(ctx context.Context, fn func(r *Ledger) error) (err error) {
	if s.db.snap != nil {
		return fn(s)
	}
	o := &sql.TxOptions{ReadOnly: true}
	if s.pg != nil {
		o.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.DB.BeginTx(ctx, o)
	if err != nil {
		return fmt.Errorf("begin read snapshot: %w", translate(err))
	}
	// Nothing is written: the end only lets the snapshot go, and Rollback
	// does so whatever fn did.
	defer func() {
		// A cancelled ctx has ended the transaction already (ErrTxDone).
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) && err == nil {
			err = fmt.Errorf("end read snapshot: %w", translate(rerr))
		}
	}()
	r := &Ledger{db: &ledgerDB{DB: s.db.DB, pg: s.db.pg, snap: tx}, Path: s.Path, Engine: s.Engine, Journal: s.Journal, pg: s.pg, now: s.now, markRead: s.markRead}
	return fn(r)
}
