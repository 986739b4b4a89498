package store

import (
	"context"
	"database/sql"
	"fmt"
)

// fenceOpen takes a PostgreSQL writer's turn on its one connection and
// checks, in tx, that the session still holds the writer lock: the
// check every write of a writer passes (a Batch's Begin, and writeTx for
// the writes outside a batch). A writer that lost the lock once never
// has it back (the pool's new session does not take it), so it is
// refused at once. A reader, or SQLite (whose lock is a file lock held
// by the process), has nothing to check.
func (s *Ledger) fenceOpen(ctx context.Context) (give func(), err error) {
	if s.pg == nil || s.pg.turn == nil {
		return func() {}, nil
	}
	if !s.pg.held.Load() {
		return nil, ErrLockLost
	}
	return s.pg.take(ctx)
}

// fenceCheck is the lock check in tx, the writer's transaction.
func (s *Ledger) fenceCheck(ctx context.Context, tx *ledgerTx) error {
	if s.pg == nil || s.pg.turn == nil {
		return nil
	}
	return s.pg.check(ctx, tx)
}

// writeTx runs body in a transaction of its own on the writer's
// connection, behind the same fence as a Batch: on PostgreSQL it waits
// for the writer's turn (ctx bounds the wait: a batch of this Ledger
// holds the one connection until it ends), checks the lock in the
// transaction, and commits only what body wrote there; a writer that
// lost the lock writes nothing (ErrLockLost). Every write outside a
// Batch goes through it.
func (s *Ledger) writeTx(ctx context.Context, body func(conn *sql.Conn, tx *ledgerTx) error) error {
	conn, tx, give, err := s.openWrite(ctx)
	if err != nil {
		return err
	}
	defer give()
	defer conn.Close()
	defer tx.Rollback()
	if err := body(conn, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}

// openWrite opens a writer's transaction behind the fence (fenceOpen,
// a connection of its own, the transaction, fenceCheck), for a Batch and
// for writeTx. On an error it has undone what it opened; else the caller
// ends tx, closes conn and then calls give.
func (s *Ledger) openWrite(ctx context.Context) (conn *sql.Conn, tx *ledgerTx, give func(), err error) {
	give, err = s.fenceOpen(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	conn, err = s.db.Conn(ctx)
	if err != nil {
		give()
		return nil, nil, nil, translate(err)
	}
	tx, err = s.db.beginOn(ctx, conn)
	if err != nil {
		conn.Close()
		give()
		return nil, nil, nil, translate(err)
	}
	// The fence: a session that lost the writer lock writes nothing,
	// and one that loses it from here on takes this transaction with it.
	if err := s.fenceCheck(ctx, tx); err != nil {
		_ = tx.Rollback()
		conn.Close()
		give()
		return nil, nil, nil, err
	}
	return conn, tx, give, nil
}
