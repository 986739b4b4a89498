package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestManyForm: a one-row write as one statement over arrays, or an error
// for what it cannot turn.
func TestManyForm(t *testing.T) {
	types := pgtype.NewMap()
	i8, f8, txt := uint32(pgtype.Int8OID), uint32(pgtype.Float8OID), uint32(pgtype.TextOID)
	for _, tc := range []struct {
		name, q string
		oids    []uint32
		want    string // "" for an error
	}{
		{"insert", "INSERT INTO t(a, b, c)\nVALUES($1, $2, $3)\nON CONFLICT(a) DO UPDATE SET b = b + excluded.b", []uint32{i8, f8, txt},
			"INSERT INTO t(a, b, c) SELECT many.a1, many.a2, many.a3 FROM unnest($1::int8[], $2::float8[], $3::text[]) AS many(a1, a2, a3)\nON CONFLICT(a) DO UPDATE SET b = b + excluded.b"},
		{"update", "UPDATE jobs SET x = x + $1, y = greatest(coalesce(y, 0), $2) WHERE id = $3", []uint32{f8, i8, i8},
			"UPDATE jobs SET x = x + many.a1, y = greatest(coalesce(y, 0), many.a2) FROM unnest($1::float8[], $2::int8[], $3::int8[]) AS many(a1, a2, a3) WHERE id = many.a3"},
		{"ten and more placeholders", "UPDATE t SET a = $10, b = $1 WHERE c = $2 AND d = $3 AND e = $4 AND f = $5 AND g = $6 AND h = $7 AND i = $8 AND j = $9",
			[]uint32{i8, i8, i8, i8, i8, i8, i8, i8, i8, i8},
			"UPDATE t SET a = many.a10, b = many.a1 FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::int8[], $9::int8[], $10::int8[]) AS many(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) WHERE c = many.a2 AND d = many.a3 AND e = many.a4 AND f = many.a5 AND g = many.a6 AND h = many.a7 AND i = many.a8 AND j = many.a9"},
		{"two value lists", "INSERT INTO t(a) VALUES($1), ($1)", []uint32{i8}, ""},
		{"update of no where", "UPDATE t SET a = $1", []uint32{i8}, ""},
		{"update with a subquery's where", "UPDATE t SET a = $1 WHERE id = (SELECT id FROM u WHERE b = $2)", []uint32{i8, i8}, ""},
		{"delete", "DELETE FROM t WHERE a = $1", []uint32{i8}, ""},
		{"placeholder past the types", "UPDATE t SET a = $2 WHERE b = $1", []uint32{i8}, ""},
		{"unknown type", "UPDATE t SET a = $1 WHERE b = 1", []uint32{999999}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := manyForm(tc.q, tc.oids, types)
			switch {
			case tc.want == "" && err == nil:
				t.Errorf("manyForm = %q, want an error", got)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("manyForm = %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

// TestPostgresExecMany: rows written by one statement over arrays are the
// rows the one-row statement writes, NULLs and flags included, added to
// the rows already there; a refused row fails the batch, named.
func TestPostgresExecMany(t *testing.T) {
	ctx := context.Background()
	u := ledgerdb.NewPostgresDB(t)
	s := openPG(t, Options{URL: u})
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	d := Dims{Cluster: "c", User: "u", Account: "a", Partition: "p"}
	row := func(at int64, ignored bool, alloc int64, used float64) []any {
		dd := d
		dd.Ignored = ignored
		return rollupPeriodRow(dd, "H100", at, Usage{AllocS: alloc, UsedS: used, Jobs: 1})
	}
	for _, rows := range [][][]any{
		{row(1, false, 10, 1.5), row(2, false, 20, 2.5), row(2, true, 30, 3.5)},
		{row(2, false, 1, 0.25), row(3, false, 2, 0.5)},
	} {
		b, err := s.Begin(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.execMany(rollupPeriodSQL("rollup_daily", "day"), rows); err != nil {
			t.Fatal(err)
		}
		if n := len(b.tx.pipe.sent); n != 1 {
			t.Errorf("statements out for %d rows: %d, want 1", len(rows), n)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	got := ledgerdb.Strings(t, u, `SELECT day, ignored, alloc_gpu_s, used_gpu_s, jobs FROM rollup_daily ORDER BY day, ignored`)
	want := []string{"1|0|10|1.5|1", "2|0|21|2.75|2", "2|1|30|3.5|1", "3|0|2|0.5|1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rollup_daily (-want +got):\n%s", d)
	}

	// An UPDATE over arrays, with a NULL among its values.
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.execMany(`UPDATE rollup_daily SET model = coalesce(?, model) WHERE day = ? AND ignored = ?`,
		[][]any{{"A100", int64(1), false}, {nil, int64(2), true}, {"L4", int64(3), false}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	got = ledgerdb.Strings(t, u, `SELECT day, model FROM rollup_daily ORDER BY day, ignored`)
	want = []string{"1|A100", "2|H100", "2|H100", "3|L4"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("models after the update (-want +got):\n%s", d)
	}

	// A statement manyForm cannot turn goes row by row; a value the
	// client cannot encode fails the batch, which rolls back, and the
	// next batch works.
	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.execMany(`INSERT INTO meta(key, value) VALUES(?, ?), (?, ?)`,
		[][]any{{"m1", "a", "m2", "b"}, {"m3", "c", "m4", "d"}}); err != nil {
		t.Fatalf("execMany of a statement of two value lists: %v", err)
	}
	if n := len(b.tx.pipe.sent); n != 2 {
		t.Errorf("statements out for 2 rows sent one by one: %d, want 2", n)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM meta WHERE key LIKE 'm_'`); n != 4 {
		t.Errorf("rows of the statement sent row by row: %d, want 4", n)
	}
	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.exec(`INSERT INTO meta(key, value) VALUES(?, ?)`, "kept out", "v"); err != nil {
		t.Fatal(err)
	}
	if err := b.execMany(rollupPeriodSQL("rollup_daily", "day"), [][]any{row(5, false, 1, 1), {struct{}{}}}); err == nil {
		t.Error("execMany of a row of one value for 13 placeholders: nil error")
	}
	if err := b.execMany(`UPDATE rollup_daily SET jobs = ? WHERE day = ?`, [][]any{{struct{}{}, int64(1)}, {int64(1), int64(2)}}); err == nil {
		t.Error("execMany of a value the client cannot encode: nil error")
	}
	b.Rollback()
	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.execMany(rollupPeriodSQL("rollup_daily", "day"), [][]any{row(6, false, 1, 1), row(7, false, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("commit after a batch failed by the client: %v", err)
	}
	if n := ledgerdb.Scalar[int64](t, u, `SELECT count(*) FROM meta WHERE key = 'kept out'`); n != 0 {
		t.Errorf("rows of the failed batch: %d, want 0", n)
	}

	refuseOn(t, u, "rollup_daily", "NEW.day = 9", "day 9 is refused")
	b, err = s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if err := b.execMany(rollupPeriodSQL("rollup_daily", "day"), [][]any{row(8, false, 1, 1), row(9, false, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err == nil || !strings.Contains(err.Error(), "day 9 is refused") || !strings.Contains(err.Error(), "INSERT INTO rollup_daily") {
		t.Errorf("Flush with a refused row = %v, want the refusal named by its statement", err)
	}
}
