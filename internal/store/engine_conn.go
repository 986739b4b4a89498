package store

import (
	"context"
	"database/sql"
	"strings"

	"github.com/aicloud/gpusuite/internal/store/dialect"
)

// ledgerDB is the store's pool. Every statement passes through sql(),
// which leaves SQLite's as written and rewrites PostgreSQL's (package dialect),
// so that one statement serves both engines.
type ledgerDB struct {
	*sql.DB
	pg *dialect.Postgres // nil on SQLite
	// snap, when set, is the read transaction its statements run in
	// (ReadSnapshot).
	snap *sql.Tx
}

// querier is where a statement runs: the pool, or a transaction.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// on is d's snapshot, or else its pool.
func (d *ledgerDB) on() querier {
	if d.snap != nil {
		return d.snap
	}
	return d.DB
}

func (d *ledgerDB) sql(q string) string { return respell(d.pg, q) }

// respell is q in the engine's spelling: as written on SQLite (pg nil).
func respell(pg *dialect.Postgres, q string) string {
	if pg == nil {
		return q
	}
	return pg.SQL(q)
}

func (d *ledgerDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return d.on().QueryContext(ctx, d.sql(q), pgArgs(d.pg != nil, args)...)
}

func (d *ledgerDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return d.on().QueryRowContext(ctx, d.sql(q), pgArgs(d.pg != nil, args)...)
}

func (d *ledgerDB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return d.on().ExecContext(ctx, d.sql(q), pgArgs(d.pg != nil, args)...)
}

func (d *ledgerDB) Query(q string, args ...any) (*sql.Rows, error) {
	return d.QueryContext(context.Background(), q, args...)
}

func (d *ledgerDB) QueryRow(q string, args ...any) *sql.Row {
	return d.QueryRowContext(context.Background(), q, args...)
}

func (d *ledgerDB) Exec(q string, args ...any) (sql.Result, error) {
	return d.ExecContext(context.Background(), q, args...)
}

func (d *ledgerDB) BeginTx(ctx context.Context, o *sql.TxOptions) (*ledgerTx, error) {
	tx, err := d.DB.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	return &ledgerTx{Tx: tx, pg: d.pg}, nil
}

// beginOn starts a transaction on conn, one of d's connections.
func (d *ledgerDB) beginOn(ctx context.Context, conn *sql.Conn) (*ledgerTx, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &ledgerTx{Tx: tx, pg: d.pg}, nil
}

// ledgerTx is a transaction whose statements pass through the dialect.
type ledgerTx struct {
	*sql.Tx
	pg *dialect.Postgres
	// pipe, when set (a PostgreSQL batch), sends the writes in pipeline
	// mode and reads their results at the next read (engine_pipeline_pg.go).
	pipe *pipeline
}

func (t *ledgerTx) sql(q string) string { return respell(t.pg, q) }

func (t *ledgerTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := t.pipe.flush(ctx); err != nil {
		return nil, err
	}
	return t.Tx.QueryContext(ctx, t.sql(q), pgArgs(t.pg != nil, args)...)
}

// QueryRowContext is the row of q. A queued write that fails aborts the
// transaction, so q then fails too; the write's own error is the one the
// batch's callers see first (Batch.queryRow flushes before it asks).
func (t *ledgerTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	_ = t.pipe.flush(ctx)
	return t.Tx.QueryRowContext(ctx, t.sql(q), pgArgs(t.pg != nil, args)...)
}

func (t *ledgerTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if t.pipe != nil {
		return deferredResult{}, t.pipe.add(ctx, t.sql(q), pgArgs(true, args))
	}
	return t.Tx.ExecContext(ctx, t.sql(q), pgArgs(t.pg != nil, args)...)
}

// execNow runs q at once, after what is queued: for a caller that reads
// its row count.
func (t *ledgerTx) execNow(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := t.pipe.flush(ctx); err != nil {
		return nil, err
	}
	return t.Tx.ExecContext(ctx, t.sql(q), pgArgs(t.pg != nil, args)...)
}

func (t *ledgerTx) PrepareContext(ctx context.Context, q string) (*ledgerStmt, error) {
	// database/sql prepares on the connection: out of pipeline mode.
	if err := t.pipe.flush(ctx); err != nil {
		return nil, err
	}
	q = t.sql(q)
	st, err := t.Tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerStmt{Stmt: st, pg: t.pg != nil, q: q, pipe: t.pipe}, nil
}

// pgArgs makes args fit PostgreSQL's columns: SQLite stores a Go bool as
// 0 or 1 in an INTEGER column, and so must PostgreSQL (its BIGINT takes
// no bool).
func pgArgs(pg bool, args []any) []any {
	if !pg {
		return args
	}
	for i, a := range args {
		if v, ok := a.(bool); ok {
			if v {
				args[i] = int64(1)
			} else {
				args[i] = int64(0)
			}
		}
	}
	return args
}

// ledgerStmt is a prepared statement whose arguments fit the engine.
type ledgerStmt struct {
	*sql.Stmt
	pg bool
	// q is the statement as sent, and pipe its transaction's pipeline:
	// an Exec is queued there, when there is one.
	q    string
	pipe *pipeline
}

func (s *ledgerStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	if s.pipe != nil {
		return deferredResult{}, s.pipe.add(ctx, s.q, pgArgs(true, args))
	}
	return s.Stmt.ExecContext(ctx, pgArgs(s.pg, args)...)
}

func (s *ledgerStmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	if err := s.pipe.flush(ctx); err != nil {
		return nil, err
	}
	return s.Stmt.QueryContext(ctx, pgArgs(s.pg, args)...)
}

// QueryRowContext: as ledgerTx's.
func (s *ledgerStmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	_ = s.pipe.flush(ctx)
	return s.Stmt.QueryRowContext(ctx, pgArgs(s.pg, args)...)
}

// firstLine is a statement's first line, to name it in an error.
func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexByte(q, '\n'); i > 0 {
		q = q[:i]
	}
	return q
}

// keyOf is row's key, its values at keyAt.
func keyOf(row []any, keyAt []int) []any {
	k := make([]any, len(keyAt))
	for i, at := range keyAt {
		k[i] = row[at]
	}
	return k
}

// eachRow calls fn for every row of a query's result (rows, err) and
// closes the rows; fn's error stops it. Its errors are the query's, fn's
// and the rows' own as they are, so that each read wraps them once, in
// its own words. Rows: database/sql's, or a batch's (Batch.query).
func eachRow(rows batchRows, err error, fn func(r batchRows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// collect is eachRow's rows read into a T each through scan: nil when
// there are none, nil with the error when one fails.
func collect[T any](rows batchRows, err error, scan func(r batchRows, v *T) error) ([]T, error) {
	var out []T
	err = eachRow(rows, err, func(r batchRows) error {
		var v T
		if err := scan(r, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
