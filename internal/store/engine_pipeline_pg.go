package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

// pipeline sends a PostgreSQL batch's writes whose results the batch does
// not read as they are made, in pipeline mode, without waiting for them:
// the server works through them while the writer goes on, and their
// results are read at the next statement that reads (query), or before
// the commit (flush). Sent one at a time and waited
// for, a pass's three hundred thousand small statements spent most of
// their time waiting on the loopback; sent together at the next read,
// the writer still waited while the server ran them
// (docs/performance.md, "PostgreSQL").
//
// A statement that fails makes its error known when the results are
// read: Batch.Flush reads them at the end of each file's writes when
// ingest asks for that, so that the error is the file's (ingest sets
// that file aside).
//
// The rows of a few tables written a row a file wait for one statement
// over arrays (hold): they go before any statement that names their
// table, and at a flush. So a statement that does not name the table
// may reach the server before rows that were waiting when it was made:
// nothing of the ledger reads those tables but through a statement that
// names them (they have no foreign keys to them and no triggers), and a
// write the server refuses fails the transaction whenever it comes.
type pipeline struct {
	conn *sql.Conn
	// descs are the server's descriptions of the statements prepared on
	// the writer's connection, shared by the store's batches.
	descs *stmtDescs
	// pl is the connection in pipeline mode, while statements are out;
	// sent are the first lines of the writes out whose results are not
	// read, and unflushed how many of them are still in the client's
	// buffer.
	pl        *pgconn.Pipeline
	sent      []string
	unflushed int
	eqb       pgx.ExtendedQueryBuilder
	// held are rows waiting for one statement over arrays each (hold).
	held []*heldRows
	// names caches whether a statement names a table (names).
	names map[[2]string]bool
	// err is the first failure: the server has aborted the transaction,
	// and every later statement says why.
	err error
}

// maxPending bounds the writes out whose results are not read: past it,
// they are read at once (a batch of a few thousand records makes a few
// tens of thousands).
const maxPending = 4096

// flushEvery is how many writes wait in the client's buffer before they
// go to the server: often enough that the server works while the writer
// does, seldom enough that a write costs no system call of its own.
const flushEvery = 8

// maxPreparedArgs: a statement of more arguments is a read of a list
// (IN (...), one placeholder a value), whose text changes with the
// list's length; it is sent unnamed, not prepared, so that the server
// does not keep a prepared statement for every length.
const maxPreparedArgs = 32

// stmtDescs are the descriptions of the statements prepared on one
// connection, by their text. They are prepared under names of the
// store's own (stmtName), which database/sql's statements, prepared by
// pgx under names of its own and deallocated when closed, never share.
type stmtDescs struct {
	conn *pgx.Conn
	m    map[string]*pgconn.StatementDescription
	// many are the statements over arrays of the one-row writes
	// (manyForm), by the one-row statement; like m, they start over on
	// another connection.
	many map[string]string
}

// get is q's description on c, nil if it was not prepared there.
func (d *stmtDescs) get(c *pgx.Conn, q string) *pgconn.StatementDescription {
	if d.conn != c {
		return nil
	}
	return d.m[q]
}

// put keeps q's description on c (another connection than the last
// starts the cache over).
func (d *stmtDescs) put(c *pgx.Conn, q string, sd *pgconn.StatementDescription) {
	if d.conn != c {
		d.conn, d.m, d.many = c, map[string]*pgconn.StatementDescription{}, map[string]string{}
	}
	d.m[q] = sd
}

// add sends one write.
func (p *pipeline) add(ctx context.Context, q string, args []any) error {
	return p.write(ctx, q, func(c *pgx.Conn) error {
		if err := p.send(ctx, c, q, args); err != nil {
			return err
		}
		return p.sent1()
	})
}

// write runs send, which sends statement q on the connection: after the
// sample rows waiting, if q names samples. Its failure is the batch's.
func (p *pipeline) write(ctx context.Context, q string, send func(*pgx.Conn) error) error {
	if p.err != nil {
		return p.err
	}
	if err := p.sendWaiting(ctx, q); err != nil {
		return err
	}
	p.err = withPgx(p.conn, send)
	p.leaveOnError()
	return p.err
}

// sendWaiting sends the rows waiting for the tables statement q names:
// the held rows, then the sample rows.
func (p *pipeline) sendWaiting(ctx context.Context, q string) error {
	for i := 0; i < len(p.held); {
		h := p.held[i]
		if !p.namesTable(q, h.table) {
			i++
			continue
		}
		// Out of held first: the statement over arrays names the table too.
		p.held = slices.Delete(p.held, i, i+1)
		if err := p.addMany(ctx, h.q, h.distinct()); err != nil {
			return err
		}
	}
	return nil
}

// leaveOnError takes the connection out of pipeline mode once the batch
// has failed (a failure of the client's own, encoding a statement, leaves
// it in): what is out is let go, and a statement sent otherwise, the
// rollback's, finds the connection free.
func (p *pipeline) leaveOnError() {
	if p.err == nil || p.pl == nil {
		return
	}
	_ = withPgx(p.conn, func(*pgx.Conn) error {
		_ = p.pl.Sync()
		return p.pl.Close()
	})
	p.pl = nil
	p.sent, p.unflushed = p.sent[:0], 0
}

// sent1 follows a write sent: the results are read past maxPending writes
// out, and the buffer goes to the server every flushEvery writes.
func (p *pipeline) sent1() error {
	if len(p.sent) >= maxPending {
		return p.sync(nil)
	}
	if p.unflushed >= flushEvery {
		p.unflushed = 0
		if err := p.pl.Flush(); err != nil {
			return fmt.Errorf("send statements: %w", translate(err))
		}
	}
	return nil
}

// send puts statement q into the client's buffer in pipeline mode (the
// connection enters it if it is not in it).
func (p *pipeline) send(ctx context.Context, c *pgx.Conn, q string, args []any) error {
	var sd *pgconn.StatementDescription
	if len(args) <= maxPreparedArgs {
		var err error
		if sd, err = p.describe(ctx, c, q); err != nil {
			return err
		}
	}
	if err := p.eqb.Build(c.TypeMap(), sd, args); err != nil {
		return fmt.Errorf("%s: %w", firstLine(q), err)
	}
	if p.pl == nil {
		p.pl = c.PgConn().StartPipeline(ctx)
	}
	if sd == nil {
		p.pl.SendQueryParams(q, p.eqb.ParamValues, nil, p.eqb.ParamFormats, p.eqb.ResultFormats)
	} else {
		// The result formats are kept until the result is read; eqb's
		// are reused by the next statement.
		p.pl.SendQueryStatement(sd, p.eqb.ParamValues, p.eqb.ParamFormats, slices.Clone(p.eqb.ResultFormats))
	}
	p.sent = append(p.sent, q)
	p.unflushed++
	return nil
}

// describe is the server's description of statement q, prepared on c
// once.
func (p *pipeline) describe(ctx context.Context, c *pgx.Conn, q string) (*pgconn.StatementDescription, error) {
	if sd := p.descs.get(c, q); sd != nil {
		return sd, nil
	}
	// Preparing is a statement of its own: what is out is read first
	// (once a statement on a connection).
	if err := p.end(); err != nil {
		return nil, err
	}
	sd, err := c.Prepare(ctx, stmtName(q), q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", firstLine(q), translate(err))
	}
	p.descs.put(c, q, sd)
	return sd, nil
}

// stmtName is the name statement q is prepared under on the server.
func stmtName(q string) string {
	h := sha256.Sum256([]byte(q))
	return "gpusuite_" + hex.EncodeToString(h[:16])
}

// sync sends what is buffered with a synchronization point and reads the
// results of the writes out, in order, then those of the read (the last
// statement sent) into rows when rows is not nil. The first failure is
// the error, named by its statement (the server skips the rest up to the
// synchronization point); the connection then leaves pipeline mode.
func (p *pipeline) sync(rows *pgRows) error {
	fail := func(q string, err error) error {
		err = fmt.Errorf("%s: %w", firstLine(q), translate(err))
		p.sent, p.unflushed = p.sent[:0], 0
		_ = p.pl.Close()
		p.pl = nil
		return err
	}
	p.unflushed = 0
	if err := p.pl.Sync(); err != nil {
		return fail("send statements", err)
	}
	for i, q := range p.sent {
		// The read's rows are kept; a write's result is its command tag.
		take := func(rr *pgconn.ResultReader) error {
			_, err := rr.Close()
			return err
		}
		if rows != nil && i == len(p.sent)-1 {
			take = rows.read
		}
		res, err := p.pl.GetResults()
		if err == nil {
			if rr, ok := res.(*pgconn.ResultReader); ok {
				err = take(rr)
			} else {
				err = fmt.Errorf("result is %T", res)
			}
		}
		if err != nil {
			return fail(q, err)
		}
	}
	p.sent = p.sent[:0]
	if res, err := p.pl.GetResults(); err != nil {
		return fail("synchronize", err)
	} else if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fail("synchronize", fmt.Errorf("result is %T, not the synchronization point", res))
	}
	return nil
}

// end reads the results of the writes out and takes the connection out
// of pipeline mode, for a statement sent otherwise (a COPY, a prepare,
// database/sql's).
func (p *pipeline) end() error {
	if p == nil || p.pl == nil {
		return nil
	}
	if len(p.sent) > 0 || p.unflushed > 0 {
		if err := p.sync(nil); err != nil {
			return err
		}
	}
	err := p.pl.Close()
	p.pl = nil
	if err != nil {
		return fmt.Errorf("leave pipeline mode: %w", translate(err))
	}
	return nil
}

// flush reads the results of the writes out and sends the sample rows
// waiting; the first failure is the error, named by its statement's first
// line (the server fails the rest of the transaction after it).
func (p *pipeline) flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	// Every table's held rows.
	for len(p.held) > 0 && p.err == nil {
		h := p.held[0]
		p.held = p.held[1:]
		p.err = p.addMany(ctx, h.q, h.distinct())
	}
	if p.err != nil {
		return p.err
	}
	p.err = withPgx(p.conn, func(*pgx.Conn) error { return p.end() })
	return p.err
}

// query sends q after the writes out and returns q's rows, read off the
// wire (a read costs one round trip, in which the server also finishes
// the writes before it). A write out that fails is the error, as
// flush's. The rows are held in memory: for the batch's reads of one
// job's or one GPU's rows, not for listings.
func (p *pipeline) query(ctx context.Context, q string, args []any) (*pgRows, error) {
	rows := &pgRows{}
	err := p.write(ctx, q, func(c *pgx.Conn) error {
		rows.types = c.TypeMap()
		if err := p.send(ctx, c, q, args); err != nil {
			return err
		}
		return p.sync(rows)
	})
	if err != nil {
		// The server failed the read or a write before it, and with it
		// the transaction: every later statement says why.
		*rows = pgRows{err: err}
	}
	return rows, err
}

// namesTable says whether statement q names table (or a column of that
// name: the test is by the word, and errs on the safe side).
func (p *pipeline) namesTable(q, table string) bool {
	k := [2]string{q, table}
	if v, ok := p.names[k]; ok {
		return v
	}
	v := hasWord(q, table)
	if p.names == nil {
		p.names = map[[2]string]bool{}
	}
	p.names[k] = v
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

// read takes a result whole.
func (r *pgRows) read(rr *pgconn.ResultReader) error {
	r.fields = slices.Clone(rr.FieldDescriptions())
	for rr.NextRow() {
		r.starts = append(r.starts, int32(len(r.data)))
		for _, v := range rr.Values() {
			if v == nil {
				r.cells = append(r.cells, -1)
				continue
			}
			r.data = append(r.data, v...)
			r.cells = append(r.cells, int32(len(r.data)))
		}
		r.n++
	}
	_, err := rr.Close()
	return err
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

// discard drops what is out and the rows waiting (the transaction is
// rolled back): the results are read and let go, so that the connection
// can take the rollback.
func (p *pipeline) discard() {
	if p == nil {
		return
	}
	if p.err == nil {
		p.err = errors.New("rolled back")
	}
	p.leaveOnError()
	p.held = nil
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
