package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// The tests of what only PostgreSQL does. They open a database of their
// own on the test server whichever engine the pass is on, and fail
// without one (GPUSUITE_TEST_PG).

// pgWait bounds how long a test waits for the server: long, because a
// busy test machine may be slow, and only reached when the test fails.
const pgWait = 60 * time.Second

// TestPostgresWriterLock: a second writer gets ErrLocked naming the
// holder; one that waits is told who holds it and takes over as soon as
// the first closes.
func TestPostgresWriterLock(t *testing.T) {
	ctx := context.Background()
	// Writers of other databases on the server hold their own locks,
	// and are not named as this one's holder.
	for range 3 {
		other, err := Open(ctx, Options{URL: ledgerdb.NewPostgresDB(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
	}
	u := ledgerdb.NewPostgresDB(t)
	first, err := Open(ctx, Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if !first.HoldsLock(ctx) {
		t.Fatal("the first writer does not hold the lock")
	}

	_, err = Open(ctx, Options{URL: u})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	holder := fmt.Sprintf("gpuacct pid %d on ", os.Getpid())
	backend := fmt.Sprintf("(backend %d ", first.pg.pid)
	if msg := err.Error(); !strings.Contains(msg, holder) || !strings.Contains(msg, backend) || !strings.Contains(msg, "only one gpuacct ingest/serve") {
		t.Errorf("lock message %q does not name the holder (%q, %q) and why", msg, holder, backend)
	}

	// A reader is welcome meanwhile.
	r, err := Open(ctx, Options{URL: u, ReadOnly: true})
	if err != nil {
		t.Fatalf("reader beside the writer: %v", err)
	}
	r.Close()

	waited := make(chan string, 16)
	type opened struct {
		s   *Ledger
		err error
	}
	done := make(chan opened, 1)
	wctx, cancel := context.WithTimeout(ctx, pgWait)
	defer cancel()
	go func() {
		s, err := Open(wctx, Options{URL: u, Wait: true, OnWait: func(h string) { waited <- h }})
		done <- opened{s, err}
	}()
	select {
	case h := <-waited:
		if !strings.Contains(h, holder) {
			t.Errorf("OnWait(%q) does not name the holder %q", h, holder)
		}
	case o := <-done:
		if o.s != nil {
			o.s.Close()
		}
		t.Fatalf("the waiting writer opened (%v) while the first held the lock", o.err)
	case <-wctx.Done():
		t.Fatal("OnWait was not called")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var second *Ledger
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("waiting writer: %v", o.err)
		}
		second = o.s
	case <-wctx.Done():
		t.Fatal("the waiting writer did not take over after the first closed")
	}
	defer second.Close()
	if !second.HoldsLock(ctx) {
		t.Error("the writer that took over does not hold the lock")
	}
	if first.HoldsLock(ctx) {
		t.Error("the closed writer still says it holds the lock")
	}
}

// TestPostgresSamplePartitions: the writer makes this month's partition
// and the next's as it opens; samples land in their UTC month's
// partition, and pruning drops the months wholly before the cut (in a
// transaction of its own), deletes the older samples of the month it
// falls in, and counts both.
func TestPostgresSamplePartitions(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	s := openPG(t, Options{URL: u, Now: func() time.Time { return now }})
	const uuid = "GPU-00000000-0000-0000-0000-000000000001"
	util := uint32(30)
	at := []time.Time{
		time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 10, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 28, 23, 59, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC),
	}
	for i, tm := range at {
		batchOf(t, s, now, func(b *Batch) error {
			_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: uint64(i + 1), Interval: 60},
				[]record.Sample{{Time: tm, UUID: uuid, GPUUtil: &util}})
			return err
		})
	}
	partitions := func() []string {
		return ledgerdb.Strings(t, u, `SELECT c.relname, (SELECT coalesce(sum(s.n), 0) FROM sample_packs s WHERE s.tableoid = c.oid)
 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = CAST('sample_packs' AS regclass) ORDER BY c.relname`)
	}
	want := []string{"sample_packs_202601|1", "sample_packs_202602|2", "sample_packs_202603|2", "sample_packs_202604|0"}
	if diff := cmp.Diff(want, partitions()); diff != "" {
		t.Fatalf("partitions and their samples (-want +got):\n%s", diff)
	}

	cut := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	dropped, err := s.DropSamplePartitions(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 3 {
		t.Errorf("dropped months held %d samples, want 3", dropped)
	}
	var n int64
	batchOf(t, s, now, func(b *Batch) error {
		n, err = b.PruneSamples(cut)
		return err
	})
	if n != 1 {
		t.Errorf("pruned %d samples, want 1 (the older one of March)", n)
	}
	want = []string{"sample_packs_202603|1", "sample_packs_202604|0"}
	if diff := cmp.Diff(want, partitions()); diff != "" {
		t.Errorf("partitions after pruning (-want +got):\n%s", diff)
	}
	if got := ledgerdb.Scalar[string](t, u, `SELECT value FROM meta WHERE key = ?`, prunedKey); got != fmt.Sprint(cut.UnixMilli()) {
		t.Errorf("pruned mark %s, want %d", got, cut.UnixMilli())
	}

	// A sample of a dropped month makes its partition again.
	batchOf(t, s, now, func(b *Batch) error {
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 10, Interval: 60},
			[]record.Sample{{Time: at[1], UUID: uuid, GPUUtil: &util}})
		return err
	})
	want = []string{"sample_packs_202602|1", "sample_packs_202603|1", "sample_packs_202604|0"}
	if diff := cmp.Diff(want, partitions()); diff != "" {
		t.Errorf("partitions after a late sample (-want +got):\n%s", diff)
	}
}

// TestPostgresErrorKinds: the server's failures carry the store's kinds:
// a table gone is ErrNotLedger, a row lock held past the busy timeout is
// ErrBusy.
func TestPostgresErrorKinds(t *testing.T) {
	ctx := context.Background()
	t.Run("dropped table", func(t *testing.T) {
		u := ledgerdb.NewPostgresDB(t)
		s, err := Open(ctx, Options{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ledgerdb.Exec(t, u, `DROP TABLE passes`)
		_, _, err = s.LastPass(ctx)
		if !errors.Is(err, ErrNotLedger) || !errors.Is(err, ErrResource) {
			t.Errorf("LastPass on a ledger without passes: %v, want ErrNotLedger and ErrResource", err)
		}
	})
	t.Run("lock timeout", func(t *testing.T) {
		u := ledgerdb.NewPostgresDB(t)
		// The busy timeout is short; connecting may take longer on a
		// busy machine.
		s, err := Open(ctx, Options{URL: withConnectTimeout(t, u), BusyTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ledgerdb.Tx(t, u, func(exec func(string, ...any)) {
			exec(`LOCK TABLE passes IN ACCESS EXCLUSIVE MODE`)
			err = s.RecordPass(ctx, Pass{Started: time.Unix(10, 0), Finished: time.Unix(11, 0), OK: true})
		})
		if !errors.Is(err, ErrBusy) || !errors.Is(err, ErrResource) {
			t.Errorf("RecordPass on a locked table: %v, want ErrBusy and ErrResource", err)
		}
	})
}

// withConnectTimeout is u with a generous connect timeout of its own, so
// that Open does not take its busy timeout for one.
func withConnectTimeout(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Query()
	q.Set("connect_timeout", fmt.Sprint(int(pgWait.Seconds())))
	p.RawQuery = q.Encode()
	return p.String()
}

// TestPostgresReaderOfEmptyDatabase: a reader pointed at a database
// without a ledger says so and how to make one, and creates nothing.
func TestPostgresReaderOfEmptyDatabase(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	_, err := Open(ctx, Options{URL: u, ReadOnly: true})
	if !errors.Is(err, ErrNotLedger) {
		t.Fatalf("reader of an empty database: %v, want ErrNotLedger", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "no gpusuite ledger in this database") || !strings.Contains(msg, "gpuacct serve or ingest") {
		t.Errorf("message %q does not say what is wrong and how to fix it", msg)
	}
	if got := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`); got != 0 {
		t.Errorf("the reader made %d tables", got)
	}
}

// TestPostgresConnectErrorOneLine: a server that cannot be reached is
// one line naming it, without the password, whichever addresses and
// TLS modes the driver tried.
func TestPostgresConnectErrorOneLine(t *testing.T) {
	ctx := context.Background()
	for _, o := range []Options{
		{URL: "postgres://gpusuite:s3cret@127.0.0.1:1/acct?connect_timeout=30"},
		{URL: "postgres://gpusuite:s3cret@127.0.0.1:1/acct?connect_timeout=30", ReadOnly: true},
	} {
		t.Run(fmt.Sprintf("read-only %v", o.ReadOnly), func(t *testing.T) {
			_, err := Open(ctx, o)
			if err == nil {
				t.Fatal("opened a store on a closed port")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret") || !strings.Contains(msg, "127.0.0.1:1") {
				t.Errorf("error %q: want one line naming the server, without the password", msg)
			}
			if !errors.Is(err, ErrResource) {
				t.Errorf("%v: not ErrResource", err)
			}
		})
	}
}

// TestPostgresNewerSchemaRefused: a ledger migrated by a newer gpuacct
// is refused by writer and reader alike, naming both versions; the
// writer's migrations leave the version at the last one this gpuacct
// knows.
func TestPostgresNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s, err := Open(ctx, Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	known := len(mustMigrations(EnginePostgres))
	if v, err := s.Version(ctx); err != nil || v != known {
		t.Errorf("version %d, %v; want %d", v, err, known)
	}
	s.Close()
	ledgerdb.Exec(t, u, `INSERT INTO gpusuite_schema(version, name) VALUES(99, 'from the future')`)
	for _, ro := range []bool{false, true} {
		_, err := Open(ctx, Options{URL: u, ReadOnly: ro})
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema 99") {
			t.Errorf("read-only %v: %v, want ErrNewerSchema naming 99", ro, err)
		}
	}
}

// TestPostgresReopenAfterClose: a writer's Close frees the lock at once,
// so that the next writer, opened right after, gets it (the server would
// free a closed session's lock only some time later).
func TestPostgresReopenAfterClose(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	for i := range 30 {
		s, err := Open(ctx, Options{URL: u})
		if err != nil {
			t.Fatalf("open #%d right after a Close: %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPostgresCheckpoint: Checkpoint (the year benchmark's, before it
// measures the ledger's size) has nothing to do on PostgreSQL and says
// nothing is wrong.
func TestPostgresCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := openPG(t, Options{URL: ledgerdb.NewPostgresDB(t)})
	if err := s.RecordPass(ctx, Pass{Started: time.Unix(10, 0), Finished: time.Unix(11, 0), OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Errorf("Checkpoint: %v", err)
	}
	if p, found, err := s.LastPass(ctx); err != nil || !found || p.Started != 10 {
		t.Errorf("LastPass after Checkpoint = %+v, %v, %v; want the pass at 10", p, found, err)
	}
}

// TestPostgresDeadHolder: a lock held by a session of a gpuacct of this
// host whose process is gone (killed: the server has not yet noticed) is
// waited for, up to the busy timeout, and then said to be so.
func TestPostgresDeadHolder(t *testing.T) {
	ctx := context.Background()
	// A pid that was this host's and is no more.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	hold := func(t *testing.T, u string) *pgx.Conn {
		t.Helper()
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["application_name"] = fmt.Sprintf("gpuacct pid %d on %s since 2026-03-02T10:00:00Z", dead.Process.Pid, host)
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, pgLockClass, pgLockObj); err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("still held", func(t *testing.T) {
		u := ledgerdb.NewPostgresDB(t)
		hold(t, u)
		_, err := Open(ctx, Options{URL: withConnectTimeout(t, u), BusyTimeout: 300 * time.Millisecond})
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "whose process is gone") {
			t.Errorf("writer beside a dead holder: %v, want ErrLocked saying its process is gone", err)
		}
	})

	t.Run("freed while waiting", func(t *testing.T) {
		u := ledgerdb.NewPostgresDB(t)
		holder := hold(t, u)
		done := make(chan error, 1)
		go func() {
			s, err := Open(ctx, Options{URL: u, BusyTimeout: pgWait})
			if err == nil {
				err = s.Close()
			}
			done <- err
		}()
		// The writer has tried, found the holder and is waiting once its
		// session's last statement is the holder's lookup.
		waiting := fmt.Sprintf("gpuacct pid %d on %%", os.Getpid())
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		giveUp := time.After(pgWait)
		for ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE ? AND query LIKE '%pg_locks%'`, waiting) == 0 {
			select {
			case err := <-done:
				t.Fatalf("the writer did not wait for a dead holder: %v", err)
			case <-giveUp:
				t.Fatal("the writer never looked up the holder")
			case <-tick.C:
			}
		}
		if err := holder.Close(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("writer after the dead holder's session ended: %v", err)
			}
		case <-time.After(pgWait):
			t.Fatal("the writer did not take the lock once it was free")
		}
	})
}

// TestPostgresOpenErrors: a store.url that cannot name a PostgreSQL
// database is refused with one line saying what is wrong.
func TestPostgresOpenErrors(t *testing.T) {
	ctx := context.Background()
	missing, err := url.Parse(ledgerdb.NewPostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	missing.Path = "/no_such_ledger_database"
	for _, tc := range []struct {
		name, url, want string
	}{
		{"another scheme", "mysql://u@db/acct", "store.url must start with postgres:// or postgresql://"},
		{"bad URL", "postgres://u:s3cret@db:notaport/acct", "invalid port"},
		{"no such database", missing.String(), `database "no_such_ledger_database" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ro := range []bool{false, true} {
				s, err := Open(ctx, Options{URL: tc.url, ReadOnly: ro})
				if err == nil {
					s.Close()
					t.Fatalf("read-only %v: opened", ro)
				}
				if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret") {
					t.Errorf("read-only %v: error %q, want one line with %q and no password", ro, msg, tc.want)
				}
			}
		})
	}
}

// TestRedactURL: no password survives, whatever form the location takes;
// what has none is returned as it is.
func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://gpusuite:s3cret@db:5432/acct?sslmode=require", "postgres://gpusuite:xxxxx@db:5432/acct?sslmode=require"},
		{"postgres://gpusuite@db/acct", "postgres://gpusuite@db/acct"},
		{"postgresql://gpusuite@db/acct?password=s3cret&sslmode=disable", "postgresql://gpusuite@db/acct?password=xxxxx&sslmode=disable"},
		{"postgres://u:s3cret@db:notaport/acct", "postgres://u:xxxxx@db:notaport/acct"},
		{"postgres://u:s3c@ret@db:notaport/acct", "postgres://u:xxxxx@db:notaport/acct"},
		{"postgres://u@db:notaport/acct?Password=s3cret&x=1", "postgres://u@db:notaport/acct?Password=xxxxx&x=1"},
		{"postgres://u:s3cret@h/db?sslpassword=s3keypass&sslmode=require", "postgres://u:xxxxx@h/db?sslpassword=xxxxx&sslmode=require"},
		{"postgres://u@h/db?sslmode=require&SSLPassword=s3keypass&password=s3cret", "postgres://u@h/db?sslmode=require&SSLPassword=xxxxx&password=xxxxx"},
		{"postgres://u@h/db?ssl%70assword=s3keypass", "postgres://u@h/db?ssl%70assword=xxxxx"},
		{"postgres://u:s3cret@db:notaport/acct?sslpassword=s3keypass", "postgres://u:xxxxx@db:notaport/acct?sslpassword=xxxxx"},
		{"host=db sslpassword=s3keypass dbname=acct", "host=db sslpassword=xxxxx dbname=acct"},
		{"host=db user=u password=s3cret dbname=acct", "host=db user=u password=xxxxx dbname=acct"},
		{"host=db PASSWORD = 's3 c\\'ret' dbname=acct", "host=db PASSWORD = xxxxx dbname=acct"},
		{"/var/lib/gpusuite/gpuacct.db", "/var/lib/gpusuite/gpuacct.db"},
		{"/data/gpu acct.db", "/data/gpu acct.db"},
		{"", ""},
	} {
		if got := RedactURL(tc.in); got != tc.want || strings.Contains(got, "s3") {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPostgresDatabaseSize: the size is asked within the caller's
// context and a failure is an error, not a size of 0; Size, which has no
// error to give, says 0 then.
func TestPostgresDatabaseSize(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: ledgerdb.NewPostgresDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.DatabaseSize(ctx); err != nil || n <= 0 {
		t.Errorf("DatabaseSize = %d, %v; want the database's bytes", n, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if n, err := s.DatabaseSize(done); err == nil {
		t.Errorf("DatabaseSize with its context ended = %d, nil; want an error", n)
	}
	s.Close()
	if n, err := s.DatabaseSize(ctx); err == nil {
		t.Errorf("DatabaseSize of a closed store = %d, nil; want an error", n)
	}
	if n := s.Size(); n != 0 {
		t.Errorf("Size of a closed store = %d, want 0", n)
	}
}
