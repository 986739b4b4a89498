package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// ledgerBefore0023 is a ledger made by migrations 1 to 22, its
// applied_keys of the text layout holding keys (key: content hash, at
// the time k's index says), not yet opened by the store.
func ledgerBefore0023(t *testing.T, keys []string, hashes map[string]string) ledgerdb.Ledger {
	t.Helper()
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	engine, driver, dsn := EngineSQLite, "sqlite3", DSN(l.Path, "wal", time.Second, false)
	if l.URL != "" {
		engine, driver, dsn = EnginePostgres, "pgx", l.URL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	if engine == EnginePostgres {
		exec(`CREATE TABLE gpusuite_schema (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied TIMESTAMPTZ NOT NULL DEFAULT now())`)
	}
	for _, m := range mustMigrations(engine)[:22] {
		exec(m.sql)
		if m.version == 21 {
			// Migration 0021's step on a ledger without samples packs
			// nothing and drops samples.
			exec(`DROP TABLE samples`)
		}
		if engine == EnginePostgres {
			exec(`INSERT INTO gpusuite_schema(version, name) VALUES ($1, $2)`, m.version, m.name)
		}
	}
	if engine == EngineSQLite {
		exec(`PRAGMA user_version = 22`)
	}
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		for i, k := range keys {
			exec(`INSERT INTO applied_keys(key, sha256, at) VALUES (?, ?, ?)`, k, hashes[k], int64(1772445600+i))
		}
	})
	return l
}

// TestKeysMigrateToDigests: migration 0023 turns an old ledger's text
// keys into digests, several batches of reads and of INSERTs: each key
// answers as before (applied with its content, a conflict with other
// content), a key never applied is new, the times stay, and the old
// table is gone.
func TestKeysMigrateToDigests(t *testing.T) {
	ctx := context.Background()
	oldBatch, oldRows := keysStepBatch, keysStepRows
	t.Cleanup(func() { keysStepBatch, keysStepRows = oldBatch, oldRows })
	keysStepBatch, keysStepRows = 3, 2
	keys := []string{
		"event:c1/77/0/gpu001/job_start", "event:c1/77/0/gpu001/job_end",
		"segment:c1/gpu001/1", "segment:c1/gpu001/2", "segment:c1/gpu002/1",
		"gpuevent:c1/gpu001/GPU-a/1772445600000000000/xid/79",
		"request/ignore/decisions-before-0013",
	}
	hashes := map[string]string{}
	for i, k := range keys {
		sum := sha256.Sum256(fmt.Append(nil, i))
		hashes[k] = hex.EncodeToString(sum[:])
	}
	l := ledgerBefore0023(t, keys, hashes)
	s := openAt(t, l, false)
	if v, err := s.Version(ctx); err != nil || v != len(mustMigrations(s.Engine)) {
		t.Fatalf("version after open: %d, %v; want %d", v, err, len(mustMigrations(s.Engine)))
	}
	if err := s.knownTables(ctx); err != nil {
		t.Errorf("tables after migration 0023: %v (applied_keys_text left?)", err)
	}
	var wantAt []string
	for i := range keys {
		wantAt = append(wantAt, fmt.Sprint(1772445600+i))
	}
	if d := cmp.Diff(wantAt, ledgerdb.Strings(t, l.Loc(), `SELECT at FROM applied_keys ORDER BY at`)); d != "" {
		t.Errorf("applied_keys' times (-want +got):\n%s", d)
	}
	batchOf(t, s, time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), func(b *Batch) error {
		for _, k := range keys {
			for _, tc := range []struct {
				hash string
				want KeyState
			}{{hashes[k], KeyApplied}, {hashes[keys[0]] + "x", KeyConflict}} {
				got, err := b.AppliedKey(k, tc.hash)
				if err != nil {
					return err
				}
				if got != tc.want {
					t.Errorf("AppliedKey(%q, %.8s…) = %v, want %v", k, tc.hash, got, tc.want)
				}
			}
		}
		if got, err := b.AppliedKey("segment:c1/gpu001/3", hashes[keys[2]]); err != nil || got != KeyNew {
			t.Errorf("AppliedKey of a key never applied = %v, %v; want new", got, err)
		}
		known, err := b.KeysKnown(append(slices.Clone(keys), "segment:c1/gpu001/3"))
		if err != nil {
			return err
		}
		want := map[string]Content{}
		for _, k := range keys {
			want[k] = ContentOf(hashes[k])
		}
		if d := cmp.Diff(want, known); d != "" {
			t.Errorf("KeysKnown after the migration (-want +got):\n%s", d)
		}
		return nil
	})
}

// TestKeysStoredOnce: a key applied again, in the same batch or a later
// one, with its content or other content, is one row holding its first
// content; every row is the fixed size of its digests.
func TestKeysStoredOnce(t *testing.T) {
	s, l := openLedger(t)
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, hashes := range [][]string{{"aa", "aa", "bb"}, {"aa", "cc"}} {
		batchOf(t, s, now, func(b *Batch) error {
			for _, h := range hashes {
				if err := b.KeyApplied("segment:c1/gpu001/1", h); err != nil {
					return err
				}
			}
			return nil
		})
		now = now.Add(time.Hour)
	}
	first := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).Unix()
	c := ContentOf("aa")
	want := []string{fmt.Sprintf("1|%d|%d|%d", len(c), len(c), first)}
	got := ledgerdb.Strings(t, l.Loc(), `SELECT count(*), min(length(content)), max(length(content)), min(at) FROM applied_keys`)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("applied_keys: count|content bytes|at (-want +got):\n%s", d)
	}
	batchOf(t, s, now, func(b *Batch) error {
		if st, err := b.AppliedKey("segment:c1/gpu001/1", "aa"); err != nil || st != KeyApplied {
			t.Errorf("the key applied again: %v, %v; want applied with its first content", st, err)
		}
		return nil
	})
}

// TestKeysSize: the bytes a key takes in the ledger, over 20,000 keys
// shaped as ingest's (segment and event keys, sha256 hex content), in
// batches of 2,000: the text layout took 113 a key on SQLite, 199 on
// PostgreSQL.
func TestKeysSize(t *testing.T) {
	s, l := openLedger(t)
	size := func() int64 {
		if l.URL != "" {
			return ledgerdb.Scalar[int64](t, l.URL, `SELECT pg_total_relation_size('applied_keys')`)
		}
		return ledgerdb.Scalar[int64](t, l.Path, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`)
	}
	const n, per = 20000, 2000
	before := size()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for from := 0; from < n; from += per {
		batchOf(t, s, now, func(b *Batch) error {
			for i := from; i < from+per; i++ {
				key := fmt.Sprintf("segment:c1/gpu%03d/%d", i%125, i/125)
				if i%4 == 0 {
					key = fmt.Sprintf("event:c1/%d/0/gpu%03d/job_start", 100000+i, i%125)
				}
				sum := sha256.Sum256([]byte(key))
				if err := b.KeyApplied(key, hex.EncodeToString(sum[:])); err != nil {
					return err
				}
			}
			return nil
		})
	}
	perKey := float64(size()-before) / n
	limit := 64.0
	if l.URL != "" {
		limit = 140
	}
	t.Logf("%.1f bytes a key", perKey)
	if perKey > limit {
		t.Errorf("applied_keys takes %.1f bytes a key, want at most %.0f", perKey, limit)
	}
}

// TestCopyCarriesKeys: gpuacct migrate's copy, interrupted inside
// applied_keys and run again (its resume point, a digest, read back from
// the destination's meta), carries every key: the destination answers
// as the source does.
func TestCopyCarriesKeys(t *testing.T) {
	ctx := context.Background()
	srcPath := copyFixture(t)
	src := openAt(t, ledgerdb.Ledger{Path: srcPath}, true)
	l := ledgerdb.NewLedger(t)
	dst := openAt(t, l, false)
	cctx, cancel := context.WithCancel(ctx)
	_, err := Copy(cctx, src, dst, CopyOptions{Batch: 1, Progress: func(p CopyProgress) {
		if p.Table == "applied_keys" && p.Rows == 1 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("copy stopped inside applied_keys: %v, want context.Canceled", err)
	}
	if n := ledgerdb.Scalar[int64](t, l.Loc(), `SELECT count(*) FROM applied_keys`); n != 1 {
		t.Fatalf("the stopped copy left %d keys, want 1", n)
	}
	dst.Close()
	dst = openAt(t, l, false)
	res, err := Copy(ctx, src, dst, CopyOptions{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range res.Tables {
		if tc.Table == "applied_keys" && (tc.Copied != 2 || tc.Rows != 3) {
			t.Errorf("applied_keys on the rerun: %d copied of %d, want 2 of 3", tc.Copied, tc.Rows)
		}
	}
	dst.Close()
	w := openAt(t, l, false)
	batchOf(t, w, copyT0, func(b *Batch) error {
		for gi := range 3 {
			key, hash := fmt.Sprintf("seg-%d", gi), fmt.Sprintf("%064d", gi)
			for _, tc := range []struct {
				hash string
				want KeyState
			}{{hash, KeyApplied}, {hash + "0", KeyConflict}} {
				if got, err := b.AppliedKey(key, tc.hash); err != nil || got != tc.want {
					t.Errorf("copied key %s, content %.8s…: %v, %v; want %v", key, tc.hash, got, err, tc.want)
				}
			}
		}
		return nil
	})
}
