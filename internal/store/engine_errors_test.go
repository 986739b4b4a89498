package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

func TestTranslateKinds(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		err                  error
		busy, ledger, source bool
	}{
		{"busy", sqlite3.Error{Code: sqlite3.ErrBusy}, true, false, true},
		{"locked table", sqlite3.Error{Code: sqlite3.ErrLocked}, true, false, true},
		{"not a database", sqlite3.Error{Code: sqlite3.ErrNotADB}, false, true, true},
		{"disk full", fmt.Errorf("insert sample: %w", sqlite3.Error{Code: sqlite3.ErrFull}), false, false, true},
		{"corrupt", sqlite3.Error{Code: sqlite3.ErrCorrupt}, false, false, true},
		{"constraint", sqlite3.Error{Code: sqlite3.ErrConstraint}, false, false, false},
		{"no such table text", errors.New("no such table: nodes"), false, true, true},
		{"locked text", errors.New("database is locked"), true, false, true},
		{"other", errors.New("boom"), false, false, false},
		{"pg lock_timeout", &pgconn.PgError{Code: "55P03"}, true, false, true},
		{"pg deadlock", fmt.Errorf("update jobs: %w", &pgconn.PgError{Code: "40P01"}), true, false, true},
		{"pg undefined table", &pgconn.PgError{Code: "42P01"}, false, true, true},
		{"pg connection failure", &pgconn.PgError{Code: "08006"}, false, false, true},
		{"pg disk full", &pgconn.PgError{Code: "53100"}, false, false, true},
		{"pg read-only transaction", &pgconn.PgError{Code: "25006"}, false, false, true},
		{"pg unique violation", &pgconn.PgError{Code: "23505"}, false, false, false},
		{"pg conn closed", fmt.Errorf("insert samples: staging table: %w", pgconn.ErrConnClosed), false, false, true},
		{"pg unexpected EOF", fmt.Errorf("prepare: %w", io.ErrUnexpectedEOF), false, false, true},
		{"pg bad conn", fmt.Errorf("begin: %w", driver.ErrBadConn), false, false, true},
		{"pg conn done", sql.ErrConnDone, false, false, true},
		{"net reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false, false, true},
		{"context deadline", fmt.Errorf("select: %w", context.DeadlineExceeded), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err)
			if g := errors.Is(got, ErrBusy); g != tc.busy {
				t.Errorf("ErrBusy %v, want %v", g, tc.busy)
			}
			if g := errors.Is(got, ErrNotLedger); g != tc.ledger {
				t.Errorf("ErrNotLedger %v, want %v", g, tc.ledger)
			}
			if g := errors.Is(got, ErrResource); g != tc.source {
				t.Errorf("ErrResource %v, want %v", g, tc.source)
			}
			if got.Error() != tc.err.Error() {
				t.Errorf("message %q, want the driver's %q", got, tc.err)
			}
			if again := translate(got); again != got {
				t.Errorf("translated twice: %v", again)
			}
		})
	}
	if translate(nil) != nil {
		t.Error("translate(nil) is not nil")
	}
}

// TestSQLiteOpenNotLedger: a file that is not a database reads as ErrNotLedger.
func TestSQLiteOpenNotLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	if err := os.WriteFile(path, []byte("this is not a database, it is a note about one.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Path: path, ReadOnly: true})
	if !errors.Is(err, ErrNotLedger) {
		t.Fatalf("open a text file: %v, want ErrNotLedger", err)
	}
}

// TestSQLiteBatchReadsTranslateBusy: a batch's own queries (not only its
// statements' preparation and execution) carry ErrBusy when another
// connection holds the database, so that ingest stops the pass rather
// than quarantining the file it was on.
func TestSQLiteBatchReadsTranslateBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "acct.db")
	s, err := Open(ctx, Options{Path: path, Journal: JournalDelete})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		call func(b *Batch) error
	}{
		{"UncheckedJobs", func(b *Batch) error { _, err := b.UncheckedJobs(0, 10); return err }},
		{"JobRows", func(b *Batch) error { _, err := b.JobRows("c1", "100"); return err }},
		{"TaggedJobs", func(b *Batch) error { _, err := b.TaggedJobs("tag"); return err }},
		{"PruneSamples", func(b *Batch) error { _, err := b.PruneSamples(time.Unix(3600, 0)); return err }},
		{"StaleOpen", func(b *Batch) error { _, err := b.StaleOpen(time.Unix(3600, 0)); return err }},
		{"NoStarts", func(b *Batch) error { _, err := b.NoStarts(10, "sacct", time.Unix(0, 0)); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A second handle whose transactions take no lock until they
			// read, with a busy timeout too short to wait out the holder.
			db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=20&_txlock=deferred")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Load the schema first, so that preparing the batch's
			// statements needs no lock and the query itself meets it.
			if _, err := conn.ExecContext(ctx, `SELECT count(*) FROM jobs`); err != nil {
				t.Fatal(err)
			}
			holder, err := sql.Open("sqlite3", "file:"+path+"?_txlock=exclusive")
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			hold, err := holder.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback()
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			err = tc.call(newBatch(ctx, conn, &ledgerTx{Tx: tx}, time.Unix(7200, 0)))
			if !errors.Is(err, ErrBusy) || !errors.Is(err, ErrResource) {
				t.Errorf("%v: not ErrBusy and ErrResource", err)
			}
		})
	}
}
