package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aicloud/gpusuite/internal/record"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// refuseOn makes the server of u refuse a row of table where cond holds,
// with message, as a constraint or a site's trigger would. (Sent as
// written: storetest respells SQLite's SQL, and this is PostgreSQL's own.)
func refuseOn(t *testing.T, u, table, cond, message string) {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`CREATE FUNCTION refuse_` + table + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF ` + cond + ` THEN RAISE EXCEPTION '` + message + `'; END IF;
  RETURN NEW;
END $$`, `CREATE TRIGGER refuse_` + table + ` BEFORE INSERT ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION refuse_` + table + `()`} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
}

// heldCount is how many rows wait in b's pipeline (Batch.hold).
func heldCount(b *Batch) int {
	n := 0
	for _, h := range b.tx.pipe.held {
		n += len(h.rows)
	}
	return n
}

// TestPostgresPipeline: a PostgreSQL batch queues its writes and sends
// them together. A read in the batch sees the writes queued before it;
// a queued write that the server refuses is named at the next Flush,
// fails every later statement and the commit, and nothing of the batch
// stays.
func TestPostgresPipeline(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	// The server refuses one file name, as a constraint or a trigger of
	// a site's would: the refusal comes when the queue is sent.
	refuseOn(t, u, "ingested_files", "NEW.name = 'bad'", "file name bad is refused")

	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "c"} {
		if err := b.FileIngested("n1", name, "h"+name, i, i); err != nil {
			t.Fatalf("queue file %s: %v", name, err)
		}
	}
	if n := heldCount(b); n != 3 {
		t.Errorf("files recorded and not written after three: %d, want 3 (a PostgreSQL batch writes them together)", n)
	}
	seen, err := b.FileSeen("n1", "c", "hc")
	if err != nil || !seen {
		t.Errorf("FileSeen(c) after its queued write = %v, %v; want true: a read sends what is queued first", seen, err)
	}
	if n := len(b.tx.pipe.sent) + heldCount(b); n != 0 {
		t.Errorf("writes out or not written after a read: %d, want 0", n)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM ingested_files`); n != 3 {
		t.Errorf("ingested_files after commit: %d rows, want 3", n)
	}

	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d", "bad", "e"} {
		if err := b.FileIngested("n1", name, "h"+name, 1, 1); err != nil {
			t.Fatalf("queue file %s: %v", name, err)
		}
	}
	err = b.Flush()
	if err == nil || !strings.Contains(err.Error(), "file name bad is refused") || !strings.Contains(err.Error(), "INSERT INTO ingested_files") {
		t.Errorf("Flush with a refused write = %v, want the server's refusal named by its statement", err)
	}
	if _, err := b.FileSeen("n1", "d", "hd"); err == nil || !strings.Contains(err.Error(), "file name bad is refused") {
		t.Errorf("read after a refused write = %v, want the refusal again", err)
	}
	if _, err := b.exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, "after", "v"); err == nil {
		t.Error("write after a refused write: nil error, want the refusal")
	}
	if err := b.Commit(); err == nil {
		t.Error("commit after a refused write: nil error")
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM ingested_files`); n != 3 {
		t.Errorf("ingested_files after the refused batch: %d rows, want the first batch's 3", n)
	}

	// The writer goes on after a rolled-back batch: its next one works.
	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FileIngested("n1", "g", "hg", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("commit after a refused batch: %v", err)
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM ingested_files`); n != 4 {
		t.Errorf("ingested_files: %d rows, want 4", n)
	}
}

// TestPostgresReadRow: a read in a PostgreSQL batch goes with the queued
// writes in one round trip and is decoded as database/sql would decode
// it: the ledger's 0/1 flags into a bool, NULL into a Null type, no row
// as sql.ErrNoRows. A read the server fails is named, and fails the rest
// of the batch.
func TestPostgresReadRow(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	b, err := s.Begin(ctx, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if _, err := b.exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, "read-row", "v"); err != nil {
		t.Fatal(err)
	}
	row, err := b.queryRow(`SELECT value, 1, 0, NULL, 7 FROM meta WHERE key = ?`, "read-row")
	if err != nil {
		t.Fatal(err)
	}
	var (
		value    string
		yes, no  bool
		null     sql.NullInt64
		one      int64
		wantNull = sql.NullInt64{}
	)
	if err := row.Scan(&value, &yes, &no, &null, nil); err != nil {
		t.Fatalf("scan a row read with a queued write: %v", err)
	}
	if value != "v" || !yes || no || null != wantNull {
		t.Errorf("row = %q %v %v %v, want the queued write's value, true, false, NULL", value, yes, no, null)
	}
	if n := len(b.tx.pipe.sent); n != 0 {
		t.Errorf("queued writes after a read: %d, want 0", n)
	}
	row, err = b.queryRow(`SELECT value FROM meta WHERE key = ?`, "no such key")
	if err != nil {
		t.Fatal(err)
	}
	if err := row.Scan(&value); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("scan of no row = %v, want sql.ErrNoRows", err)
	}
	row, err = b.queryRow(`SELECT 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	if err := row.Scan(&one); err == nil || !strings.Contains(err.Error(), "2 columns into 1") {
		t.Errorf("scan of 2 columns into 1 value = %v, want an error saying so", err)
	}
	// Rows with NULLs among their values, each scanned from its own
	// place; a flag that is neither 0 nor 1 is no bool.
	rows, err := b.query(`SELECT a, b, c FROM (VALUES (1, NULL, 'a'), (NULL, 2, NULL), (3, 4, 'ccc')) v(a, b, c)`)
	if err != nil {
		t.Fatal(err)
	}
	type abc struct {
		A, B sql.NullInt64
		C    sql.NullString
	}
	var got []abc
	for rows.Next() {
		var r abc
		if err := rows.Scan(&r.A, &r.B, &r.C); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []abc{{A: sql.NullInt64{Int64: 1, Valid: true}, C: sql.NullString{String: "a", Valid: true}}, {B: sql.NullInt64{Int64: 2, Valid: true}},
		{A: sql.NullInt64{Int64: 3, Valid: true}, B: sql.NullInt64{Int64: 4, Valid: true}, C: sql.NullString{String: "ccc", Valid: true}}}
	if d := cmp.Diff(want, got); d != "" || rows.Err() != nil {
		t.Errorf("rows with NULLs (-want +got):\n%s%v", d, rows.Err())
	}
	row, err = b.queryRow(`SELECT 2`)
	if err != nil {
		t.Fatal(err)
	}
	if err := row.Scan(&yes); err == nil {
		t.Error("scan of 2 into a bool: nil error, want one")
	}
	// A read the server fails: named by its statement, and every later
	// statement of the batch fails with it.
	if _, err := b.queryRow(`SELECT 1 / (SELECT count(*) FROM meta WHERE key = 'none')`); err == nil || !strings.Contains(err.Error(), "division by zero") || !strings.Contains(err.Error(), "SELECT 1 /") {
		t.Errorf("failed read = %v, want the server's error named by the read", err)
	}
	if _, err := b.exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, "after", "v"); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("write after a failed read = %v, want the read's failure", err)
	}
}

// TestPostgresRefusedWriteThenRead: a queued write the server refuses,
// then a read: the read fails with the write's refusal, named by the
// write's statement, and so does every later statement.
func TestPostgresRefusedWriteThenRead(t *testing.T) {
	ctx := context.Background()
	s := openPG(t, Options{URL: ledgerdb.NewPostgresDB(t)})
	b, err := s.Begin(ctx, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	for _, v := range []string{"v", "again"} {
		if _, err := b.exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, "read-row", v); err != nil {
			t.Fatal(err)
		}
	}
	_, err = b.queryRow(`SELECT value FROM meta WHERE key = ?`, "read-row")
	var pe *pgconn.PgError
	if err == nil || !strings.Contains(err.Error(), "INSERT INTO meta") || !errors.As(err, &pe) || pe.Code != "23505" {
		t.Errorf("read after a refused write = %v, want the write's refusal named by its statement", err)
	}
	if err := b.Flush(); err == nil {
		t.Error("Flush after a refused write: nil error")
	}
}

// TestPostgresSamplesPacked: on PostgreSQL, the packs a segment writes
// go out in the pipeline; a read in the batch sees them, a segment that
// repeats stored samples finds them stored, and a pack the server refuses
// is named at the next Flush and leaves nothing of the batch.
func TestPostgresSamplesPacked(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	t0 := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	util := uint32(60)
	segment := func(from, n int) []record.Sample {
		var out []record.Sample
		for i := from; i < from+n; i++ {
			out = append(out, record.Sample{Time: t0.Add(time.Duration(i) * time.Minute), UUID: "GPU-00000000-0000-0000-0000-000000000002",
				GPUUtil: &util, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
		}
		return out
	}
	h := &record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 60}
	b, err := s.Begin(ctx, t0.Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if err := b.Event(ev(record.JobStart, "n1", t0, 2)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if n, err := b.Segment(h, segment(10*i, 10)); err != nil || n != 10 {
			t.Fatalf("segment %d: %d new, %v; want 10", i, n, err)
		}
	}
	row, err := b.queryRow(`SELECT coalesce(sum(n), 0) FROM sample_packs`)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	if err := row.Scan(&stored); err != nil || stored != 30 {
		t.Errorf("samples seen by a read in the batch: %d, %v; want 30", stored, err)
	}
	// Repeats of stored samples, and then new ones among repeats.
	if n, err := b.Segment(h, segment(5, 10)); err != nil || n != 0 {
		t.Errorf("segment of stored samples: %d new, %v; want 0", n, err)
	}
	if _, err := b.Segment(h, segment(30, 5)); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Segment(h, segment(28, 10)); err != nil || n != 3 {
		t.Errorf("segment of 7 stored and 3 new samples: %d new, %v; want 3", n, err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 38 {
		t.Errorf("samples after commit: %d, want 38", n)
	}

	// The server refuses a pack, as a site's trigger would: the refusal is
	// named at the next Flush, and nothing of the batch stays.
	refuseOn(t, u, "sample_packs", fmt.Sprintf("NEW.t0_ms >= %d", t0.Add(40*time.Minute).UnixMilli()), "a pack after 11:10 is refused")
	b, err = s.Begin(ctx, t0.Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if _, err := b.Segment(h, segment(40, 2)); err != nil && !strings.Contains(err.Error(), "is refused") {
		t.Fatalf("segment of a refused pack: %v", err)
	}
	if err := b.Flush(); err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Errorf("Flush with a refused pack = %v, want the server's refusal", err)
	}
	b.Rollback()
	if n := ledgerdb.Scalar[int64](t, u, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 38 {
		t.Errorf("samples after the refused batch: %d, want 38", n)
	}
}

func TestHasWord(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"SELECT count(*) FROM samples", true},
		{"SELECT max(t_ms) FROM samples s, jobs r", true},
		{`UPDATE samples SET energy_delta_mj = $1`, true},
		{"samples", true},
		{"INSERT INTO job_gpus(job, first, last, samples, sample_s) VALUES($1)", true},
		{"INSERT INTO job_hours(job, sample_s) VALUES($1, $2)", false},
		{"CREATE TABLE samples_202603 PARTITION OF x", false},
		{"SELECT 1 FROM jobsamples", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := hasWord(tt.s, "samples"); got != tt.want {
			t.Errorf("hasWord(%q, samples) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestPostgresWritesOut: writes go out without waiting for their results:
// past maxPending of them the results are read at once and the batch goes
// on; a batch rolled back with writes out leaves none of them, and the
// writer's next batch works on the same connection; a read of a long
// list (more than maxPreparedArgs values) is sent unnamed and read alike.
func TestPostgresWritesOut(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	n := maxPending + maxPending/2
	write := func(b *Batch, key string) error {
		_, err := b.exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, key, "v")
		return err
	}
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := write(b, fmt.Sprintf("w%05d", i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if out := len(b.tx.pipe.sent); out > maxPending {
			t.Fatalf("after write %d: %d writes out, want at most %d", i, out, maxPending)
		}
	}
	if out := len(b.tx.pipe.sent); out != n-maxPending {
		t.Errorf("writes out after %d: %d, want %d (the first %d read when they reached the bound)", n, out, n-maxPending, maxPending)
	}
	row, err := b.queryRow(`SELECT count(*) FROM meta WHERE key LIKE 'w%'`)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := row.Scan(&got); err != nil || got != n {
		t.Errorf("rows the batch wrote, read in it: %d, %v; want %d", got, err, n)
	}
	if err := b.KeyApplied("k", "h"); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, maxPreparedArgs+8)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	keys[len(keys)-1] = "k"
	if got, err := b.KeysKnown(keys); err != nil || len(got) != 1 || got["k"] != ContentOf("h") {
		t.Errorf("KeysKnown of %d keys, one applied in the batch = %v, %v; want k alone", len(keys), got, err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM meta WHERE key LIKE 'w%'`); got != int64(n) {
		t.Errorf("rows after commit: %d, want %d", got, n)
	}

	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(b, "rolled back"); err != nil {
		t.Fatal(err)
	}
	if out := len(b.tx.pipe.sent); out != 1 {
		t.Fatalf("writes out before the rollback: %d, want 1", out)
	}
	b.Rollback()
	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatalf("batch after a rollback with a write out: %v", err)
	}
	if err := write(b, "after"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("commit after a rollback with a write out: %v", err)
	}
	if got := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM meta WHERE key IN ('rolled back', 'after')`); got != 1 {
		t.Errorf("rolled back and later rows stored: %d, want the later one alone", got)
	}
}
