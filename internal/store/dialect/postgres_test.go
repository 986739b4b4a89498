package dialect

import (
	"sync"
	"testing"
)

// TestRewrite: each rule on the statements the store writes, and what it
// must leave alone.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"parameters numbered in order",
			`SELECT a FROM t WHERE x = ? AND y = ?`,
			`SELECT a FROM t WHERE x = $1 AND y = $2`},
		{"numbered parameters kept, a bare one after the highest",
			`SELECT a FROM t WHERE x = ?2 AND y = ?1 AND z = ?`,
			`SELECT a FROM t WHERE x = $2 AND y = $1 AND z = $3`},
		{"a numbered parameter used twice",
			`SELECT a FROM t WHERE b <= ?1 AND c > ?1 LIMIT ?2`,
			`SELECT a FROM t WHERE b <= $1 AND c > $1 LIMIT $2`},
		{"user and end as columns",
			`SELECT user, end FROM jobs WHERE end > ? AND user = ? ORDER BY end`,
			`SELECT "user", "end" FROM jobs WHERE "end" > $1 AND "user" = $2 ORDER BY "end"`},
		{"qualified user and end",
			`SELECT j.end, j.user FROM jobs j`,
			`SELECT j."end", j."user" FROM jobs j`},
		{"end as a SET target",
			`UPDATE jobs SET end = ?, start = ? WHERE id = ?`,
			`UPDATE jobs SET "end" = $1, start = $2 WHERE id = $3`},
		{"END closing a CASE stays a keyword",
			`SELECT CASE WHEN a = 1 THEN 1 ELSE 0 END, end FROM t`,
			`SELECT CASE WHEN a = 1 THEN 1 ELSE 0 END, "end" FROM t`},
		{"an end column inside a CASE, then END",
			`SELECT CASE WHEN end IS NULL THEN start ELSE end END FROM t`,
			`SELECT CASE WHEN "end" IS NULL THEN start ELSE "end" END FROM t`},
		{"CASE END after a call and a parameter",
			`SELECT CASE WHEN x THEN max(end) ELSE ? END FROM t`,
			`SELECT CASE WHEN x THEN max("end") ELSE $1 END FROM t`},
		{"ON CONFLICT DO UPDATE qualifies the row's columns",
			`INSERT INTO t(a, b) VALUES(?, ?) ON CONFLICT(a) DO UPDATE SET b = b + excluded.b, c = max(c, excluded.c)`,
			`INSERT INTO t(a, b) VALUES($1, $2) ON CONFLICT(a) DO UPDATE SET b = t.b + excluded.b, c = greatest(t.c, excluded.c)`},
		{"DO UPDATE qualifies in calls and WHERE, not after RETURNING",
			`INSERT INTO t(a, end) VALUES(?, ?) ON CONFLICT(a) DO UPDATE SET end = coalesce(excluded.end, end) WHERE end IS NULL RETURNING id`,
			`INSERT INTO t(a, "end") VALUES($1, $2) ON CONFLICT(a) DO UPDATE SET "end" = coalesce(excluded."end", t."end") WHERE t."end" IS NULL RETURNING id`},
		{"DO NOTHING qualifies nothing",
			`INSERT INTO nodes(cluster, name) VALUES(?, ?) ON CONFLICT DO NOTHING`,
			`INSERT INTO nodes(cluster, name) VALUES($1, $2) ON CONFLICT DO NOTHING`},
		{"two-argument max/min, aggregates kept",
			`SELECT max(a, b), min(a, ?), max(a), min(x), max(coalesce(a, b)) FROM t`,
			`SELECT greatest(a, b), least(a, $1), max(a), min(x), max(coalesce(a, b)) FROM t`},
		{"instr, ifnull, group_concat",
			`SELECT instr(a, ','), ifnull(a, 0), group_concat(a, ',') FROM t`,
			`SELECT strpos(a, ','), coalesce(a, 0), string_agg(a, ',') FROM t`},
		{"casts to SQLite's widths",
			`SELECT CAST(a AS INTEGER), CAST(b AS REAL), CAST(c AS TEXT) FROM t`,
			`SELECT CAST(a AS BIGINT), CAST(b AS DOUBLE PRECISION), CAST(c AS TEXT) FROM t`},
		{"literals, quoted names and comments untouched",
			"SELECT 'user end ? max(a,b) instr(', \"end\", 'it''s ?' FROM t -- ? user max(a,b)\n WHERE a = ? /* ?5 end ifnull( */",
			"SELECT 'user end ? max(a,b) instr(', \"end\", 'it''s ?' FROM t -- ? user max(a,b)\n WHERE a = $1 /* ?5 end ifnull( */"},
		{"NULLS FIRST/LAST and first/last columns",
			`SELECT first, last FROM job_gpus ORDER BY a NULLS FIRST, b NULLS LAST`,
			`SELECT first, last FROM job_gpus ORDER BY a NULLS FIRST, b NULLS LAST`},
		{"PostgreSQL's own spelling passes",
			`SELECT string_agg(n.name, ',' ORDER BY n.name), to_char(to_timestamp(day*86400) AT TIME ZONE 'UTC', 'YYYY-MM') FROM t`,
			`SELECT string_agg(n.name, ',' ORDER BY n.name), to_char(to_timestamp(day*86400) AT TIME ZONE 'UTC', 'YYYY-MM') FROM t`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rewrite(tc.in); got != tc.want {
				t.Errorf("Rewrite(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestSQLCache: the cached spelling is Rewrite's, from any goroutine.
func TestSQLCache(t *testing.T) {
	var p Postgres
	const q = `SELECT end FROM jobs WHERE user = ?`
	want := Rewrite(q)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = p.SQL(q)
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Errorf("SQL #%d = %s, want %s", i, g, want)
		}
	}
}
