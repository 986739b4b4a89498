package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// untilLost runs write up to three times (the first may meet the dead
// connection itself, and a statement outside a transaction may be
// retried by database/sql on a new session) and returns its last error.
func untilLost(write func() error) error {
	var err error
	for range 3 {
		if err = write(); errors.Is(err, ErrLockLost) {
			return err
		}
	}
	return err
}

// TestPostgresRecordPassFenced: a writer whose session ended, while a
// second writer took the lock, records no pass: RecordPass, like a
// batch, fails with ErrLockLost and writes nothing.
func TestPostgresRecordPassFenced(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	a := openPG(t, Options{URL: u})
	if err := a.RecordPass(ctx, Pass{Started: time.Now(), Finished: time.Now(), OK: true}); err != nil {
		t.Fatalf("record pass with the lock held: %v", err)
	}
	takeOver(t, u, a)
	err := untilLost(func() error { return a.RecordPass(ctx, Pass{Started: time.Now(), Finished: time.Now()}) })
	if !errors.Is(err, ErrLockLost) {
		t.Errorf("record pass after the lock was lost: %v, want ErrLockLost", err)
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM passes`); n != 1 {
		t.Errorf("passes rows: %d, want 1 (the one recorded before the lock was lost)", n)
	}
}

// TestPostgresCopyDestFenced: Copy into a PostgreSQL destination whose
// writer lost its lock to another writer writes nothing there: its
// mark and its pages pass the writer's fence.
func TestPostgresCopyDestFenced(t *testing.T) {
	ctx := context.Background()
	srcURL := ledgerdb.NewPostgresDB(t)
	w, err := Open(ctx, Options{URL: srcURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := sampleBatch(t, w, 1, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)).Commit(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := openPG(t, Options{URL: srcURL, ReadOnly: true})
	du := ledgerdb.NewPostgresDB(t)
	dst := openPG(t, Options{URL: du})
	takeOver(t, du, dst)
	err = untilLost(func() error { _, err := Copy(ctx, src, dst, CopyOptions{}); return err })
	if !errors.Is(err, ErrLockLost) {
		t.Errorf("copy by a destination writer that lost its lock: %v, want ErrLockLost", err)
	}
	if n := ledgerdb.Scalar[int64](t, du, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 0 {
		t.Errorf("samples written by a destination writer that lost its lock: %d, want 0", n)
	}
	if n := ledgerdb.Scalar[int64](t, du, `SELECT count(*) FROM meta WHERE key = ?`, copySourceKey); n != 0 {
		t.Errorf("copy marks written by a destination writer that lost its lock: %d, want 0", n)
	}
}

// TestPostgresMethodsBesideBatchEndWithCtx: the contract Ledger states:
// a writer's methods called while a batch holds its one connection fail
// when their ctx ends (they do not hang past it), and write nothing.
func TestPostgresMethodsBesideBatchEndWithCtx(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	b, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	for _, tc := range []struct {
		name string
		call func(context.Context) error
	}{
		{"Version", func(c context.Context) error { _, err := s.Version(c); return err }},
		{"NodeLastRecords", func(c context.Context) error { _, err := s.NodeLastRecords(c); return err }},
		{"RecordPass", func(c context.Context) error { return s.RecordPass(c, Pass{Started: time.Now(), Finished: time.Now()}) }},
		{"DropSamplePartitions", func(c context.Context) error { _, err := s.DropSamplePartitions(c, time.Now()); return err }},
		{"DatabaseSize", func(c context.Context) error { _, err := s.DatabaseSize(c); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			if err := tc.call(c); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s beside an open batch: %v, want its ctx's deadline", tc.name, err)
			}
		})
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM passes`); n != 0 {
		t.Errorf("passes rows: %d, want 0", n)
	}
}

// TestPostgresLockCheckSession: the lock check knows the writer's
// session by its pid and its start together: the same pid with another
// start (a pid the server reused) is not the holder.
func TestPostgresLockCheckSession(t *testing.T) {
	ctx := context.Background()
	s := openPG(t, Options{URL: ledgerdb.NewPostgresDB(t)})
	q, pid, started := s.pg.lockCheck()
	for _, tc := range []struct {
		name         string
		pid, started int64
		want         bool
	}{
		{"the session that took the lock", pid, started, true},
		{"its pid, another start", pid, started + 1, false},
		{"another pid", pid + 1, started, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bool
			if err := s.db.QueryRowContext(ctx, q, tc.pid, tc.started).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("lock check: %v, want %v", got, tc.want)
			}
		})
	}
	if !s.HoldsLock(ctx) {
		t.Error("the writer says it does not hold its lock")
	}
}

// TestPostgresCloseBatchOpenBound: Close with a batch left open gives up
// after the bound its message states, unlock and the pool's close
// together (each used to wait that long, one after the other).
func TestPostgresCloseBatchOpenBound(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: ledgerdb.NewPostgresDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	start := time.Now()
	err = s.Close()
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("after %v (a batch left open)", pgCloseWait)) {
		t.Fatalf("close with a batch open: %v, want connections still in use after %v", err, pgCloseWait)
	}
	// Generous: the bound is one pgCloseWait; two of them is the bug.
	if took >= 2*pgCloseWait-time.Second {
		t.Errorf("close with a batch open took %v, its message says %v", took.Round(100*time.Millisecond), pgCloseWait)
	}
}
