package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSQLiteOpenMigratesAndLocks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "acct.db")
	s, err := Open(ctx, Options{Path: path, Journal: JournalAuto})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Version(ctx)
	if err != nil || v != len(mustMigrations(EngineSQLite)) {
		t.Fatalf("version %d, %v; want %d", v, err, len(mustMigrations(EngineSQLite)))
	}
	var fk, busy int
	var mode string
	s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
	s.db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy)
	s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if diff := cmp.Diff([]any{1, 10000, "wal"}, []any{fk, busy, mode}); diff != "" {
		t.Errorf("connection settings (-want +got):\n%s", diff)
	}
	// A second writer refuses, naming the holder.
	_, err = Open(ctx, Options{Path: path})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "pid") || !strings.Contains(msg, "only one gpuacct ingest/serve") {
		t.Errorf("lock message %q does not say who holds it and why", msg)
	}
	// A reader is welcome meanwhile.
	r, err := Open(ctx, Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	if _, err := r.db.Exec(`INSERT INTO meta(key, value) VALUES('a', 'b')`); err == nil {
		t.Errorf("read-only store accepted a write")
	}
	r.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening applies nothing new and keeps the data.
	s, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatalf("reopen after the writer left: %v", err)
	}
	defer s.Close()
	if v2, _ := s.Version(ctx); v2 != v {
		t.Errorf("version moved from %d to %d", v, v2)
	}
}

func TestSQLiteNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "acct.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, ro := range []bool{false, true} {
		_, err := Open(ctx, Options{Path: path, ReadOnly: ro})
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema 99") {
			t.Errorf("read-only %v: %v, want ErrNewerSchema naming 99", ro, err)
		}
	}
}

func TestSQLiteOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o600)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no path", Options{}, "no path given"},
		{"missing directory", Options{Path: "/nonexistent/x/acct.db"}, "directory"},
		{"parent is a file", Options{Path: filepath.Join(notDir, "acct.db")}, "not a directory"},
		{"bad journal", Options{Path: filepath.Join(dir, "j.db"), Journal: "memory"}, "journal mode \"memory\""},
		{"reader of a missing file", Options{Path: filepath.Join(dir, "none.db"), ReadOnly: true}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(ctx, tc.o)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

func TestSQLiteDSN(t *testing.T) {
	got := DSN("/data/gpu acct.db", JournalDelete, 5*time.Second, false)
	want := "file:/data/gpu%20acct.db?_busy_timeout=5000&_cache_size=-262144&_foreign_keys=on&_journal_mode=DELETE&_synchronous=FULL&_txlock=immediate"
	if got != want {
		t.Errorf("DSN\n got %s\nwant %s", got, want)
	}
	if ro := DSN("/a.db", JournalWAL, time.Second, true); !strings.Contains(ro, "mode=ro") || strings.Contains(ro, "_journal_mode") || strings.Contains(ro, "_cache_size") {
		t.Errorf("read-only DSN %s", ro)
	}
}

func TestSQLiteChooseJournal(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ want, got string }{{"wal", "auto"}, {"wal", ""}, {"delete", "delete"}, {"wal", "WAL"}} {
		m, err := chooseJournal(tc.got, dir)
		if err != nil || m != tc.want {
			t.Errorf("chooseJournal(%q) = %q, %v; want %q", tc.got, m, err, tc.want)
		}
	}
	// /dev/shm is tmpfs, a local file system: WAL.
	if m, _ := chooseJournal("auto", "/dev/shm"); m != "wal" {
		t.Errorf("tmpfs: %q", m)
	}
}

// TestSQLiteMigrationStepInItsTransaction: a migration's Go step runs in
// the migration's transaction, so a step that fails leaves neither its
// own writes nor the migration applied, and the next open runs both
// again; a step of a migration number that has none is refused.
func TestSQLiteMigrationStepInItsTransaction(t *testing.T) {
	ctx := context.Background()
	last := len(mustMigrations(EngineSQLite))
	old := migrationSteps
	t.Cleanup(func() { migrationSteps = old })
	runs := 0
	step := func(fail bool) migrationStep {
		return func(ctx context.Context, tx *ledgerTx) error {
			runs++
			// Fails if a failed run's table was kept.
			if _, err := tx.ExecContext(ctx, `CREATE TABLE step_probe (x INTEGER)`); err != nil {
				return err
			}
			if fail {
				return errors.New("step failed")
			}
			return nil
		}
	}
	path := filepath.Join(t.TempDir(), "acct.db")
	migrationSteps = map[int]migrationStep{last: step(true)}
	if _, err := Open(ctx, Options{Path: path}); err == nil || !strings.Contains(err.Error(), "step failed") {
		t.Fatalf("open with a failing step: %v, want its error", err)
	}
	migrationSteps = map[int]migrationStep{last: step(false)}
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatalf("open after the step was mended: %v", err)
	}
	defer s.Close()
	if v, err := s.Version(ctx); err != nil || v != last {
		t.Errorf("version %d, %v; want %d", v, err, last)
	}
	if runs != 2 {
		t.Errorf("the step ran %d times, want 2: once failing, once again", runs)
	}
	migrationSteps = map[int]migrationStep{last + 1: step(false)}
	if _, err := migrations(EngineSQLite); err == nil || !strings.Contains(err.Error(), "no migration of that number") {
		t.Errorf("a step without its migration: %v, want refused", err)
	}
}
