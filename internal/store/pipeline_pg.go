package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pipeline holds a PostgreSQL batch's writes whose results the batch does
// not read, and sends them to the server together, in order, in one round
// trip, before the next statement that reads, the next COPY, and the
// commit. Sent one at a time, a pass's three hundred thousand small
// statements spent most of their time waiting on the loopback, not in
// the server (docs/performance.md, "PostgreSQL").
//
// A statement that fails makes its error known when the pipeline is sent:
// Batch.Flush sends it at the end of each file's writes, so that the
// error is the file's (ingest sets that file aside).
type pipeline struct {
	conn  *sql.Conn
	queue []pendingExec
	// err is the first failure sent: the server has aborted the
	// transaction, and every later flush says why.
	err error
}

// pendingExec is one statement waiting in the pipeline, already in
// PostgreSQL's spelling with its arguments fitted (pgArgs).
type pendingExec struct {
	q    string
	args []any
}

// maxPending bounds the pipeline: past it, the queue goes out at once
// (a batch of a few thousand records queues a few tens of thousands).
const maxPending = 4096

// add queues one statement.
func (p *pipeline) add(ctx context.Context, q string, args []any) error {
	if p.err != nil {
		return p.err
	}
	p.queue = append(p.queue, pendingExec{q: q, args: append([]any(nil), args...)})
	if len(p.queue) >= maxPending {
		return p.flush(ctx)
	}
	return nil
}

// flush sends the queued statements and reads their results; the first
// failure is the error, named by its statement's first line (the server
// fails the rest of the transaction after it).
func (p *pipeline) flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if p.err != nil || len(p.queue) == 0 {
		return p.err
	}
	q := p.queue
	p.queue = p.queue[:0]
	p.err = withPgx(p.conn, func(c *pgx.Conn) error {
		var batch pgx.Batch
		for _, e := range q {
			batch.Queue(e.q, e.args...)
		}
		br := c.SendBatch(ctx, &batch)
		var first error
		for _, e := range q {
			if _, err := br.Exec(); err != nil && first == nil {
				first = fmt.Errorf("%s: %w", firstLine(e.q), translate(err))
			}
		}
		if err := br.Close(); err != nil && first == nil {
			first = fmt.Errorf("send statements: %w", translate(err))
		}
		return first
	})
	return p.err
}

// discard drops what is queued (the transaction is rolled back).
func (p *pipeline) discard() {
	if p != nil {
		p.queue = p.queue[:0]
	}
}

// deferredResult is the sql.Result of a queued statement: nothing is
// known of it yet. Callers that count rows use Batch.execNow.
type deferredResult struct{}

var errDeferred = errors.New("statement queued: its row count is not known until it is sent")

func (deferredResult) LastInsertId() (int64, error) { return 0, errDeferred }
func (deferredResult) RowsAffected() (int64, error) { return 0, errDeferred }

// withPgx runs f on the pgx connection under conn, for what database/sql
// cannot say: COPY and batches.
func withPgx(conn *sql.Conn, f func(*pgx.Conn) error) error {
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection %T is not pgx's", dc)
		}
		return f(sc.Conn())
	})
}
