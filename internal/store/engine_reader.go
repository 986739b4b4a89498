package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReadConns bounds one reader's connection pool (invariant 9): each
// connection holds its own page cache and may run one query.
const ReadConns = 4

// openReader opens a read-only pool. A WAL database needs its -shm
// index: with a writer running, SQLite reads the writer's -shm even when
// it may not write it. With no writer there is none, and a reader who
// may not write the directory cannot make one ("attempt to write a
// readonly database"); then, and only when no -wal holds unmerged pages
// and no writer holds the lock, the file is opened immutable: nothing
// can change it while nobody writes.
func openReader(ctx context.Context, o Options) (*sql.DB, error) {
	db, err := poolOf(DSN(o.Path, "", o.BusyTimeout, true))
	if err != nil {
		return nil, err
	}
	err = probe(ctx, db)
	if err == nil {
		return db, nil
	}
	db.Close()
	if unix.Access(filepath.Dir(o.Path), unix.W_OK) == nil {
		return nil, err
	}
	if safe, why := immutableSafe(o.Path); !safe {
		return nil, fmt.Errorf("%w (read-only directory and %s: ask the service user to start gpuacct serve, or read a copy)", err, why)
	}
	db, err2 := poolOf(DSN(o.Path, "", o.BusyTimeout, true) + "&immutable=1")
	if err2 != nil {
		return nil, err2
	}
	if err2 := probe(ctx, db); err2 != nil {
		db.Close()
		return nil, fmt.Errorf("%w (and immutable: %w)", err, err2)
	}
	return db, nil
}

func poolOf(dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(ReadConns)
	db.SetMaxIdleConns(ReadConns)
	return db, nil
}

// probe reads the schema, which a WAL database without a usable -shm
// refuses.
func probe(ctx context.Context, db *sql.DB) error {
	var n int
	return db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n)
}

// immutableSafe reports whether path may be read as immutable: no -wal
// with content (pages not yet in the main file) and no writer holding
// the lock.
func immutableSafe(path string) (bool, string) {
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return false, "a -wal file holds pages not yet in the database"
	}
	f, err := os.Open(LockPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return true, ""
	}
	if err != nil {
		return false, fmt.Sprintf("the writer lock %s is unreadable (%v)", LockPath(path), err)
	}
	defer f.Close()
	// A shared lock is refused while the writer holds its exclusive one;
	// it is dropped at once so that a writer may start.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return false, "a writer is running but its -shm is missing or unreadable"
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true, ""
}
