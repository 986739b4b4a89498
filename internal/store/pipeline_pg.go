package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// pipeline holds a PostgreSQL batch's writes whose results the batch does
// not read, and sends them to the server together, in order, in one round
// trip with the next statement that reads (query), or before the next
// COPY and the commit (flush). Sent one at a time, a pass's three hundred thousand small
// statements spent most of their time waiting on the loopback, not in
// the server (docs/performance.md, "PostgreSQL").
//
// A statement that fails makes its error known when the pipeline is sent:
// Batch.Flush sends it at the end of each file's writes, so that the
// error is the file's (ingest sets that file aside).
//
// New sample rows wait too, for one COPY of many segments' rows (2,570
// COPYs of a few hundred rows each cost the server half as much again
// as one of the same rows): they go before any statement that names the
// samples table, at a flush, and when maxCopying of them wait. So a
// statement that does not name samples may reach the server before rows
// that were waiting when it was queued: nothing of the ledger's reads
// samples but through a statement that names it (samples has no foreign
// keys to it and no triggers), and a COPY the server refuses fails the
// transaction whenever it comes.
type pipeline struct {
	conn  *sql.Conn
	queue []pendingExec
	// copying are sample rows for COPY (samples_pg.go), in the order of
	// sampleColumns; the first copyAt statements of queue were queued
	// before them, and go first.
	copying [][]any
	copyAt  int
	// names caches whether a statement names the samples table.
	names map[string]bool
	// err is the first failure sent: the server has aborted the
	// transaction, and every later flush says why.
	err error
}

// maxCopying bounds the sample rows waiting for COPY (a few hundred bytes
// each).
const maxCopying = 1 << 16

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
	if len(p.copying) > 0 && p.namesSamples(q) {
		if err := p.sendCopy(ctx); err != nil {
			return err
		}
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
	if p.err != nil || len(p.queue)+len(p.copying) == 0 {
		return p.err
	}
	if err := p.sendCopy(ctx); err != nil || len(p.queue) == 0 {
		return err
	}
	p.err = withPgx(p.conn, func(c *pgx.Conn) error {
		return sendWrites(ctx, c, p.take())
	})
	return p.err
}

// sendWrites sends a batch of writes and reads their results: the first
// failure, named by its statement.
func sendWrites(ctx context.Context, c *pgx.Conn, batch *pgx.Batch) error {
	br := c.SendBatch(ctx, batch)
	first := results(br, batch.QueuedQueries)
	if err := br.Close(); err != nil && first == nil {
		first = fmt.Errorf("send statements: %w", translate(err))
	}
	return first
}

// query sends the queued statements and q in the same round trip, and
// returns q's rows, read off the wire (a read costs one round trip, not
// one for the queue and one for itself). A queued write that fails is
// the error, as flush's. The rows are held in memory: for the batch's
// reads of one job's or one GPU's rows, not for listings.
func (p *pipeline) query(ctx context.Context, q string, args []any) (*pgRows, error) {
	if p.err != nil {
		return &pgRows{err: p.err}, p.err
	}
	if len(p.copying) > 0 && p.namesSamples(q) {
		if err := p.sendCopy(ctx); err != nil {
			return &pgRows{err: err}, err
		}
	}
	rows := &pgRows{}
	err := withPgx(p.conn, func(c *pgx.Conn) error {
		batch := p.take()
		writes := len(batch.QueuedQueries)
		batch.Queue(q, args...)
		br := c.SendBatch(ctx, batch)
		if p.err = results(br, batch.QueuedQueries[:writes]); p.err != nil {
			br.Close()
			return p.err
		}
		rows.read(c.TypeMap(), br)
		if err := br.Close(); err != nil && rows.err == nil {
			rows.err = translate(err)
		}
		if rows.err != nil {
			// The server failed the read, and with it the transaction:
			// every later statement says why, named by the read.
			rows.err = fmt.Errorf("%s: %w", firstLine(q), rows.err)
			p.err = rows.err
		}
		return nil
	})
	if err != nil {
		rows.err = err
	}
	return rows, rows.err
}

// take empties the queue into a pgx batch.
func (p *pipeline) take() *pgx.Batch {
	return p.takeFirst(len(p.queue))
}

// takeFirst takes the first n queued statements into a pgx batch. Sent
// before the sample rows waiting for COPY, they are no longer queued
// before them (a statement that names samples sends the rows first).
func (p *pipeline) takeFirst(n int) *pgx.Batch {
	p.copyAt = max(p.copyAt-n, 0)
	batch := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, n+1)}
	for _, e := range p.queue[:n] {
		batch.Queue(e.q, e.args...)
	}
	rest := copy(p.queue, p.queue[n:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	return batch
}

// copyRows adds sample rows to the next COPY.
func (p *pipeline) copyRows(ctx context.Context, rows [][]any) error {
	if p.err != nil {
		return p.err
	}
	if len(p.copying) == 0 {
		p.copyAt = len(p.queue)
	}
	p.copying = append(p.copying, rows...)
	if len(p.copying) >= maxCopying {
		return p.sendCopy(ctx)
	}
	return nil
}

// sendCopy sends the statements queued before the waiting sample rows,
// then the rows by one COPY; statements queued after them stay queued.
func (p *pipeline) sendCopy(ctx context.Context) error {
	if p.err != nil || len(p.copying) == 0 {
		return p.err
	}
	p.err = withPgx(p.conn, func(c *pgx.Conn) error {
		if p.copyAt > 0 {
			if err := sendWrites(ctx, c, p.takeFirst(p.copyAt)); err != nil {
				return err
			}
		}
		cols := sampleColumns()
		if _, err := c.CopyFrom(ctx, pgx.Identifier{"samples"}, cols[:], pgx.CopyFromRows(p.copying)); err != nil {
			return fmt.Errorf("insert samples: copy: %w", translate(err))
		}
		return nil
	})
	clear(p.copying)
	p.copying, p.copyAt = p.copying[:0], 0
	return p.err
}

// namesSamples says whether statement q names the samples table (or a
// column of that name: the test is by the word, and errs on the safe
// side).
func (p *pipeline) namesSamples(q string) bool {
	if v, ok := p.names[q]; ok {
		return v
	}
	v := hasWord(q, "samples")
	if p.names == nil {
		p.names = map[string]bool{}
	}
	p.names[q] = v
	return v
}

// hasWord says whether w stands in s as a word of its own, not as part of
// a longer identifier.
func hasWord(s, w string) bool {
	ident := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !ident(s[j-1])) && (end == len(s) || !ident(s[end])) {
			return true
		}
		i = end
	}
}

// results reads the results of the writes sent, in order: the first
// failure, named by its statement.
func results(br pgx.BatchResults, sent []*pgx.QueuedQuery) error {
	var first error
	for _, qq := range sent {
		if _, err := br.Exec(); err != nil && first == nil {
			first = fmt.Errorf("%s: %w", firstLine(qq.SQL), translate(err))
		}
	}
	return first
}

// pgRows are a result as the server sent it, each value decoded when
// scanned with the connection's type map, as pgx's own Rows.Scan does (a
// NULL into a plain type is an error; sql.Scanner types take it). Next,
// Scan, Err and Close are those of database/sql's Rows. The values are
// held in one buffer, a few bytes each in PostgreSQL's binary format:
// Batch.query serves reads of one job's or one GPU's rows, whose callers
// keep them all anyway.
type pgRows struct {
	types  *pgtype.Map
	fields []pgconn.FieldDescription
	data   []byte
	// cells are each value's end in data, -1 for NULL, row after row;
	// starts are each row's start in data, and n the number of rows.
	cells  []int32
	starts []int32
	n      int
	// at is the row Next moved to, 1-based.
	at  int
	err error
}

// read takes the next result of br whole.
func (r *pgRows) read(types *pgtype.Map, br pgx.BatchResults) {
	rows, err := br.Query()
	if err != nil {
		r.err = translate(err)
		return
	}
	defer rows.Close()
	r.types = types
	r.fields = slices.Clone(rows.FieldDescriptions())
	for rows.Next() {
		r.starts = append(r.starts, int32(len(r.data)))
		for _, v := range rows.RawValues() {
			if v == nil {
				r.cells = append(r.cells, -1)
				continue
			}
			r.data = append(r.data, v...)
			r.cells = append(r.cells, int32(len(r.data)))
		}
		r.n++
	}
	rows.Close()
	r.err = translate(rows.Err())
}

func (r *pgRows) Next() bool {
	if r.err != nil || r.at >= r.n {
		return false
	}
	r.at++
	return true
}

func (r *pgRows) Err() error { return r.err }

func (r *pgRows) Close() error { return nil }

func (r *pgRows) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if r.at == 0 || r.at > r.n {
		return errors.New("scan called without a row")
	}
	if len(dest) != len(r.fields) {
		return fmt.Errorf("scan %d columns into %d values", len(r.fields), len(dest))
	}
	first, start := (r.at-1)*len(r.fields), r.starts[r.at-1]
	for i, d := range dest {
		end := r.cells[first+i]
		var raw []byte
		if end >= 0 {
			raw, start = r.data[start:end:end], end
			if raw == nil {
				raw = []byte{} // an empty value (of no data at all) is not NULL
			}
		}
		if d == nil {
			continue
		}
		f := r.fields[i]
		if err := r.scan(f, raw, d); err != nil {
			return fmt.Errorf("scan column %q: %w", f.Name, err)
		}
	}
	return nil
}

// scan decodes one value. The ledger's flags are integers on both engines
// (0 or 1): into a bool they go as database/sql would put them, and any
// other integer is an error, as there.
func (r *pgRows) scan(f pgconn.FieldDescription, raw []byte, d any) error {
	b, ok := d.(*bool)
	if !ok || (f.DataTypeOID != pgtype.Int2OID && f.DataTypeOID != pgtype.Int4OID && f.DataTypeOID != pgtype.Int8OID) {
		return r.types.Scan(f.DataTypeOID, f.Format, raw, d)
	}
	var v int64
	if err := r.types.Scan(f.DataTypeOID, f.Format, raw, &v); err != nil {
		return err
	}
	if v != 0 && v != 1 {
		return fmt.Errorf("integer %d is not a flag (0 or 1)", v)
	}
	*b = v == 1
	return nil
}

// pgRow is the first row of pgRows, as database/sql's Row is: no row is
// sql.ErrNoRows (pgx.ErrNoRows is both).
type pgRow struct{ rows *pgRows }

func (r pgRow) Scan(dest ...any) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return r.rows.Scan(dest...)
}

// discard drops what is queued (the transaction is rolled back).
func (p *pipeline) discard() {
	if p != nil {
		p.queue = p.queue[:0]
		p.copying, p.copyAt = p.copying[:0], 0
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
