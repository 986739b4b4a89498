package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// The store's kinds of failure. Errors out of the store carry them (match
// with errors.Is) so that no other package has to know the driver's
// codes or messages; the driver's own text stays the message.
var (
	// ErrBusy means the database stayed locked by another connection
	// longer than the busy timeout: try again.
	ErrBusy = errors.New("database is locked")
	// ErrNotLedger means the file is not a gpusuite ledger (not a
	// database, or one without the ledger's tables).
	ErrNotLedger = errors.New("not a gpusuite accounting database")
	// ErrResource means the machine or the file failed the statement
	// (disk full, I/O, read-only, out of memory, corrupt, locked), not
	// the data it was given: retrying later may succeed.
	ErrResource = errors.New("store resource failure")
)

// kindError is a driver error with the store's kinds of it.
type kindError struct {
	err   error
	kinds []error
}

// Error is the driver's message on one line: pgx puts each address it
// tried to connect to on a line of its own, and a log line or a CLI's
// error must stay one.
func (e *kindError) Error() string { return oneLine(e.err.Error()) }

func oneLine(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	s = strings.ReplaceAll(s, ":\n\t", ": ")
	s = strings.ReplaceAll(s, "\n\t", "; ")
	return strings.ReplaceAll(s, "\n", " ")
}

func (e *kindError) Unwrap() []error { return append([]error{e.err}, e.kinds...) }

// translate attaches the store's kinds to a driver error, once; an error
// with no kind, or already translated, is returned as it is.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var k *kindError
	if errors.As(err, &k) {
		return err
	}
	var kinds []error
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			kinds = []error{ErrBusy, ErrResource}
		case sqlite3.ErrNotADB:
			kinds = []error{ErrNotLedger, ErrResource}
		case sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrReadonly, sqlite3.ErrNomem, sqlite3.ErrCantOpen,
			sqlite3.ErrProtocol, sqlite3.ErrCorrupt:
			kinds = []error{ErrResource}
		}
	}
	if kinds == nil {
		kinds = pgKinds(err)
	}
	// Some paths hand the driver's message on without its code.
	if kinds == nil {
		switch msg := err.Error(); {
		case strings.Contains(msg, "no such table"):
			// The writer's ledger lost a table (a file replaced under
			// serve): the pass must stop, not quarantine good files.
			kinds = []error{ErrNotLedger, ErrResource}
		case strings.Contains(msg, "database is locked"):
			kinds = []error{ErrBusy, ErrResource}
		}
	}
	if kinds == nil {
		return err
	}
	return &kindError{err: err, kinds: kinds}
}

// pgKinds are the store's kinds of a PostgreSQL error, by SQLSTATE class
// and code (PostgreSQL's appendix A), or of a failed connection.
func pgKinds(err error) []error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "55P03", pe.Code == "40P01", pe.Code == "40001":
			// lock_not_available, deadlock_detected, serialization_failure
			return []error{ErrBusy, ErrResource}
		case pe.Code == "42P01":
			// undefined_table: not a ledger, or one that lost a table
			return []error{ErrNotLedger, ErrResource}
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "57"),
			strings.HasPrefix(pe.Code, "58"), strings.HasPrefix(pe.Code, "XX"), pe.Code == "25006":
			// connection, insufficient resources, operator intervention,
			// system errors, internal errors, read-only transaction
			return []error{ErrResource}
		}
		return nil
	}
	if connFailed(err) {
		return []error{ErrResource}
	}
	return nil
}

// pgconnPkg is the package of the PostgreSQL driver's connection errors.
const pgconnPkg = "github.com/jackc/pgx/v5/pgconn"

// connFailed tells whether err is a failed or broken connection rather
// than the server's answer to a statement: a connection that could not
// be made, a cut link, an unexpected EOF, a closed connection, a network
// error or timeout. None of these is about the data (a cut link, a
// killed proxy, a server host reboot), so the pass must stop, not
// quarantine the file it was applying. Every error of pgx's connection
// layer counts (its unexported ones too, by package): the server's own
// answers are *pgconn.PgError, handled before.
func connFailed(err error) bool {
	var ce *pgconn.ConnectError
	var ne *net.OpError
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	return fromPgconn(err)
}

// fromPgconn tells whether any error in err's tree is a type of pgx's
// connection package.
func fromPgconn(err error) bool {
	if err == nil {
		return false
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == pgconnPkg {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return fromPgconn(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if fromPgconn(e) {
				return true
			}
		}
	}
	return false
}

// scanRows are a query's rows whose Scan and Err errors carry the store's
// kinds, as scanRow's do.
type scanRows struct{ *sql.Rows }

func (r scanRows) Scan(dest ...any) error { return translate(r.Rows.Scan(dest...)) }

func (r scanRows) Err() error { return translate(r.Rows.Err()) }

// translateRows takes a query's result: its error, and its rows' Scan and
// Err errors, carry the store's kinds.
func translateRows(rows *sql.Rows, err error) (scanRows, error) {
	if err != nil {
		return scanRows{}, translate(err)
	}
	return scanRows{rows}, nil
}
