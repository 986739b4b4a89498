// Package ledgerdb lets tests inspect and poke a ledger's rows with
// plain SQL, on a connection of their own: the store exports no *sql.DB,
// and SQL stays under internal/store (docs/store.md). Every helper fails
// the test on an error, so that a fixture cannot fail silently. A
// ledger is named by its location: a SQLite file's path or a
// PostgreSQL URL (NewLedger makes one of the engine under test), and
// statements are written in SQLite's spelling (internal/store/dialect).
//
// Files: ledgerdb.go (SQL on a ledger's rows), ledger.go (each test's
// ledger on the engine under test), cutlink.go (a link to the test
// server that can be cut, ViaCutLink), lock.go (the ledger held locked,
// Lock).
package ledgerdb

import (
	"database/sql"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "github.com/mattn/go-sqlite3"    // database/sql driver "sqlite3"

	"github.com/aicloud/gpusuite/internal/store/dialect"
)

// busyMillis is how long a statement waits for the store's writer; long,
// because a busy test machine may be slow to let go.
const busyMillis = "30000"

// ledger is a one-connection pool on a test ledger, with its engine's
// spelling of each statement.
type ledger struct {
	*sql.DB
	pg bool
}

func (l ledger) sql(q string) string {
	if l.pg {
		return dialect.Rewrite(q)
	}
	return q
}

// open opens the ledger at loc: a SQLite file's path or a PostgreSQL
// URL. On SQLite it sets no journal mode: the store chose it and a
// second connection must not change it.
func open(t testing.TB, loc string) ledger {
	t.Helper()
	if isURL(loc) {
		db, err := sql.Open("pgx", loc)
		if err != nil {
			t.Fatalf("open ledger %q: %v", loc, err)
		}
		db.SetMaxOpenConns(1)
		return ledger{DB: db, pg: true}
	}
	q := url.Values{}
	q.Set("_busy_timeout", busyMillis)
	q.Set("_foreign_keys", "on")
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: loc}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		t.Fatalf("open ledger %q: %v", loc, err)
	}
	db.SetMaxOpenConns(1)
	return ledger{DB: db}
}

// Exec runs one statement on the ledger at path and returns the rows it
// changed.
func Exec(t testing.TB, path, q string, args ...any) int64 {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	r, err := db.Exec(db.sql(q), args...)
	if err != nil {
		t.Fatalf("exec on %q: %v\n%s", path, err, q)
	}
	n, _ := r.RowsAffected()
	return n
}

// Tx runs fn in one transaction on the ledger at path and commits it;
// exec fails the test on an error (the transaction is rolled back).
func Tx(t testing.TB, path string, fn func(exec func(q string, args ...any))) {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatalf("begin on %q: %v", path, err)
	}
	defer tx.Rollback()
	fn(func(q string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(db.sql(q), args...); err != nil {
			t.Fatalf("exec on %q: %v\n%s", path, err, q)
		}
	})
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit on %q: %v", path, err)
	}
}

// Row reads one row into dest; no row fails the test.
func Row(t testing.TB, path, q string, args []any, dest ...any) {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	if err := db.QueryRow(db.sql(q), args...).Scan(dest...); err != nil {
		t.Fatalf("query on %q: %v\n%s", path, err, q)
	}
}

// Scalar is the one value q selects.
func Scalar[T any](t testing.TB, path, q string, args ...any) T {
	t.Helper()
	var v T
	Row(t, path, q, args, &v)
	return v
}

// Query calls fn for each row q selects, with a scan of the row into
// dest.
func Query(t testing.TB, path, q string, args []any, fn func(scan func(dest ...any))) {
	t.Helper()
	each(t, path, q, args, func(rows *sql.Rows) {
		fn(func(dest ...any) {
			t.Helper()
			if err := rows.Scan(dest...); err != nil {
				t.Fatalf("scan on %q: %v\n%s", path, err, q)
			}
		})
	})
}

// Texts calls fn for each row q selects with its columns as text, nil
// for NULL; fn must copy what it keeps.
func Texts(t testing.TB, path, q string, args []any, fn func(cols []*string)) {
	t.Helper()
	var vals []sql.NullString
	var ptrs []any
	var texts []*string
	each(t, path, q, args, func(rows *sql.Rows) {
		if vals == nil {
			cols, err := rows.Columns()
			if err != nil {
				t.Fatalf("query on %q: %v\n%s", path, err, q)
			}
			vals = make([]sql.NullString, len(cols))
			ptrs = make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			texts = make([]*string, len(cols))
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("scan on %q: %v\n%s", path, err, q)
		}
		for i := range vals {
			texts[i] = nil
			if vals[i].Valid {
				texts[i] = &vals[i].String
			}
		}
		fn(texts)
	})
}

// each calls fn for each row q selects on its own connection to the
// ledger at path, failing the test when the query does.
func each(t testing.TB, path, q string, args []any, fn func(rows *sql.Rows)) {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	rows, err := db.Query(db.sql(q), args...)
	if err != nil {
		t.Fatalf("query on %q: %v\n%s", path, err, q)
	}
	defer rows.Close()
	for rows.Next() {
		fn(rows)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("query on %q: %v\n%s", path, err, q)
	}
}

// Strings is every row of q as text, columns joined by "|", NULL as
// "NULL": for comparing rows with cmp.Diff.
func Strings(t testing.TB, path, q string, args ...any) []string {
	t.Helper()
	var out []string
	Texts(t, path, q, args, func(cols []*string) {
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = "NULL"
			if c != nil {
				parts[i] = *c
			}
		}
		out = append(out, strings.Join(parts, "|"))
	})
	return out
}
