package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// pgSample writes one sample of GPU-1 on node n1 at at, as segment seq.
func pgSample(b *Batch, seq uint64, at time.Time) error {
	util := uint32(5)
	_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: seq, Interval: 60},
		[]record.Sample{{Time: at, UUID: "GPU-1", GPUUtil: &util}})
	return err
}

// openPG opens a store with o, closed when the test ends.
func openPG(t *testing.T, o Options) *Ledger {
	t.Helper()
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// takeOver ends a's session on the server of u and opens a second
// writer there, which waits for the lock a held and takes it.
func takeOver(t *testing.T, u string, a *Ledger) *Ledger {
	t.Helper()
	ledgerdb.Exec(t, u, `SELECT pg_terminate_backend(?)`, int64(a.pg.pid))
	ctx, cancel := context.WithTimeout(context.Background(), pgWait)
	defer cancel()
	s, err := Open(ctx, Options{URL: u, Wait: true})
	if err != nil {
		t.Fatalf("second writer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sampleBatch begins a batch on s that holds one pgSample, left open.
func sampleBatch(t *testing.T, s *Ledger, seq uint64, at time.Time) *Batch {
	t.Helper()
	b, err := s.Begin(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pgSample(b, seq, at); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	return b
}

// TestPostgresLostLockCannotCommit: once the server ends the writer's
// session, a second writer takes the lock, and the first writes nothing
// more: its batches fail with ErrLockLost (also ErrLocked), it says it
// no longer holds the lock, and only the second's sample is stored.
func TestPostgresLostLockCannotCommit(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	a := openPG(t, Options{URL: u})
	b := takeOver(t, u, a)

	// The first try may meet the dead connection itself; the next runs
	// on a new session, which has no lock.
	for i := range 3 {
		bt, err := a.Begin(ctx, time.Now())
		if err == nil {
			if err = pgSample(bt, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
				err = bt.Commit()
			} else {
				bt.Rollback()
			}
			if err == nil {
				t.Fatalf("try %d: the writer that lost its lock committed", i)
			}
		}
		if errors.Is(err, ErrLockLost) {
			break
		}
		if i == 2 {
			t.Fatalf("the writer that lost its lock: %v, want ErrLockLost", err)
		}
	}
	if _, err := a.Begin(ctx, time.Now()); !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrLocked) {
		t.Errorf("begin after the lock is lost: %v, want ErrLockLost and ErrLocked", err)
	}
	if a.HoldsLock(ctx) {
		t.Error("the writer whose session ended says it holds the lock")
	}

	bt := sampleBatch(t, b, 2, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
	if err := bt.Commit(); err != nil {
		t.Fatalf("the writer holding the lock: %v", err)
	}
	if !b.HoldsLock(ctx) {
		t.Error("the writer that took over does not hold the lock")
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 1 {
		t.Errorf("%d samples stored, want 1 (the second writer's)", n)
	}
}

// TestPostgresLockLostMidBatch: a session ended while its batch is open
// takes the batch with it.
func TestPostgresLockLostMidBatch(t *testing.T) {
	u := ledgerdb.NewPostgresDB(t)
	a := openPG(t, Options{URL: u})
	bt := sampleBatch(t, a, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	takeOver(t, u, a)
	if err := bt.Commit(); err == nil {
		t.Error("a batch whose session ended committed")
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 0 {
		t.Errorf("%d samples stored, want none", n)
	}
}

// TestPostgresWriterOneSession: a writer's pool is one connection that
// the pool never replaces on its own, and the lock is on it.
func TestPostgresWriterOneSession(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	c := s.pg.pool.Config()
	if c.MaxConns != 1 || c.MinConns != 1 || c.MaxConnLifetime < 50*365*24*time.Hour || c.MaxConnIdleTime < 50*365*24*time.Hour {
		t.Errorf("writer pool: max %d, min %d, lifetime %v, idle %v; want one connection kept for good",
			c.MaxConns, c.MinConns, c.MaxConnLifetime, c.MaxConnIdleTime)
	}
	var pid uint32
	if err := s.db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if pid != s.pg.pid {
		t.Errorf("the writer's statements run on backend %d, its lock on %d", pid, s.pg.pid)
	}
	r := openPG(t, Options{URL: u, ReadOnly: true})
	if got := r.pg.pool.Config().MaxConns; got != pgConns {
		t.Errorf("reader pool of %d, want %d", got, pgConns)
	}
}

// TestPostgresHoldsLockDuringBatch: HoldsLock answers at once while a
// batch has the writer's connection (LostLock must not take a long batch
// for a lost lock).
func TestPostgresHoldsLockDuringBatch(t *testing.T) {
	ctx := context.Background()
	s := openPG(t, Options{URL: ledgerdb.NewPostgresDB(t)})
	bt, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Rollback()
	// A context already ended: HoldsLock must not need the connection.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if !s.HoldsLock(done) {
		t.Error("HoldsLock during a batch: false")
	}
}

// TestPostgresHoldsLockWhileClosing: LostLock's HoldsLock from another
// goroutine while Close runs is no data race (go test -race), and says
// false once closed.
func TestPostgresHoldsLockWhileClosing(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: ledgerdb.NewPostgresDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	asked := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			held := s.HoldsLock(ctx)
			select {
			case asked <- held:
			default:
			}
		}
	}()
	if !<-asked {
		t.Error("HoldsLock before Close: false")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	close(stop)
	<-done
	if s.HoldsLock(ctx) {
		t.Error("HoldsLock after Close: true")
	}
}

// TestPostgresNewMonthBesideReader: a report reading samples (an open
// read transaction) does not stop the first batch of a month the writer
// had no partition for, nor does that batch stop the report.
func TestPostgresNewMonthBesideReader(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u, BusyTimeout: time.Second})
	r := openPG(t, Options{URL: u, ReadOnly: true})
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM sample_packs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	// The new month's batch is not held up by the report.
	b := sampleBatch(t, s, 1, time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
	// The report reads on while the batch is open.
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM sample_packs`).Scan(&n); err != nil {
		t.Errorf("the report beside the new month's batch: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresDropPartitionsBesideReader: dropping old months while a
// report reads samples gives up after a short wait (ErrBusy), leaving
// them, and is not tried again for an hour; the prune batch deletes
// their rows, and the emptied months are dropped then.
func TestPostgresDropPartitionsBesideReader(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	now := time.Now()
	s := openPG(t, Options{URL: u, Now: func() time.Time { return now }})
	batchOf(t, s, time.Now(), func(b *Batch) error {
		if err := pgSample(b, 1, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)); err != nil {
			return err
		}
		return pgSample(b, 2, time.Date(2026, 2, 5, 0, 0, 0, 0, time.UTC))
	})
	cut := time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)
	ledgerdb.Tx(t, u, func(exec func(string, ...any)) {
		exec(`SELECT coalesce(sum(n), 0) FROM sample_packs`)
		n, err := s.DropSamplePartitions(ctx, cut)
		if !errors.Is(err, ErrBusy) || n != 0 {
			t.Errorf("drop beside a report: %d, %v; want 0 and ErrBusy", n, err)
		}
	})
	parts := func() []string {
		return ledgerdb.Strings(t, u, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = CAST('sample_packs' AS regclass) AND c.relname < 'sample_packs_202603' ORDER BY 1`)
	}
	// After a timeout, no try for an hour: each may stall readers.
	if n, err := s.DropSamplePartitions(ctx, cut); err != nil || n != 0 {
		t.Errorf("drop right after a timeout: %d, %v; want 0, nil (not tried)", n, err)
	}
	if got := parts(); len(got) != 2 {
		t.Errorf("partitions before March right after a timeout: %v, want both months kept", got)
	}
	now = now.Add(partitionDropRetry)
	var n int64
	batchOf(t, s, time.Now(), func(b *Batch) error {
		var err error
		n, err = b.PruneSamples(cut)
		return err
	})
	if n != 2 {
		t.Errorf("the prune batch deleted %d samples, want 2", n)
	}
	if n, err := s.DropSamplePartitions(ctx, cut); err != nil || n != 0 {
		t.Errorf("drop after the rows went: %d, %v; want 0 (empty months dropped)", n, err)
	}
	if got := parts(); len(got) != 1 || got[0] != "sample_packs_202602" {
		t.Errorf("partitions before March an hour later, after pruning: %v, want [sample_packs_202602]", got)
	}
}
