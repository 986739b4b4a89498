package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/google/go-cmp/cmp"
)

// TestForeignGPUs: only samples inside the window count, whichever pack
// holds them; a GPU without a foreign process is not listed; most
// samples first, then by cluster, node and index; at most limit.
func TestForeignGPUs(t *testing.T) {
	s := ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name) VALUES (1, 'c1', 'n1'), (2, 'c2', 'n2')`,
		`INSERT INTO gpus(id, uuid, node_id, idx) VALUES (1, 'GPU-a', 1, 0), (2, 'GPU-b', 1, 1), (3, 'GPU-c', 2, NULL), (4, 'GPU-d', 1, 2)`,
		`INSERT INTO samples(gpu_id, t_ms, interval_ms, foreign_procs) VALUES
		 (1, 599000, 10000, 1), (1, 610000, 10000, 1), (1, 620000, 10000, 0), (1, 950000, 10000, 2), (1, 1200000, 10000, 1),
		 (2, 700000, 10000, 1), (2, 710000, 10000, 1),
		 (3, 800000, 10000, 1), (3, 810000, 10000, 1), (3, 820000, 10000, 1),
		 (4, 700000, 10000, 0)`,
	)
	a := ForeignGPU{Cluster: "c1", Node: "n1", Index: pi(0), Samples: 2, First: 610000, Last: 950000}
	b := ForeignGPU{Cluster: "c1", Node: "n1", Index: pi(1), Samples: 2, First: 700000, Last: 710000}
	c := ForeignGPU{Cluster: "c2", Node: "n2", Samples: 3, First: 800000, Last: 820000}
	for _, tc := range []struct {
		name  string
		limit int
		want  []ForeignGPU
	}{
		{"all", 0, []ForeignGPU{c, a, b}},
		{"limit", 2, []ForeignGPU{c, a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ForeignGPUs(context.Background(), 600000, 1200000, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ForeignGPUs (-want +got):\n%s", diff)
			}
		})
	}
	// The engine's own query (LATERAL on PostgreSQL) reads what the plain
	// join reads, over random windows across the packs' edges.
	rnd := rand.New(rand.NewPCG(35, 6))
	for range 50 {
		from := rnd.Int64N(1_300_000)
		to := from + rnd.Int64N(700_000)
		t.Run(fmt.Sprintf("window %d-%d", from, to), func(t *testing.T) {
			want, err := s.foreignGPUs(context.Background(), foreignSQL, from, to, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ForeignGPUs(context.Background(), from, to, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ForeignGPUs (-plain join +own query):\n%s", diff)
			}
		})
	}
}

// TestPostgresForeignGPUsProbesEachGPU: on a partition of many GPUs'
// packs (1,000 GPUs, a day), the read's generic plan probes each GPU's
// key range for an hour; the plain join's hashes a scan of the whole
// partition (2.4 s at 10,000 GPUs and 4 days, BenchmarkForeignGPUs).
func TestPostgresForeignGPUsProbesEachGPU(t *testing.T) {
	ctx := context.Background()
	url := ledgerdb.NewPostgresDB(t)
	w, err := Open(ctx, Options{URL: url, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO nodes(id, cluster, name) SELECT i, 'c1', 'n' || i FROM generate_series(1, 125) i`,
		`INSERT INTO gpus(id, uuid, node_id, idx) SELECT i, 'GPU-' || i, (i - 1) / 8 + 1, (i - 1) % 8 FROM generate_series(1, 1000) i`,
		`INSERT INTO sample_packs(gpu_id, t0_ms, n, t1_ms, data)
		 SELECT g.id, t, 0, t + 300000, ''::bytea FROM gpus g CROSS JOIN generate_series(0, 86400000 - 1, 300000) t`,
		`ANALYZE`,
	} {
		if _, err := w.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{URL: url, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	from, to := int64(20*3600000), int64(21*3600000)
	t.Logf("the plain join:\n%s", genericPlan(t, s, foreignSQL, from, to))
	if plan := genericPlan(t, s, foreignPG, from, to); strings.Contains(plan, "Seq Scan on sample_packs") {
		t.Errorf("the read scans the partition:\n%s", plan)
	}
}

// BenchmarkForeignGPUs reads an hour's foreign processes of 10,000 GPUs
// (8 a node) from a ledger that holds four days of packs before that
// hour, as PostgreSQL's month partition does (11.5 M packs), by the
// plain join and by the read's own query in turns; on PostgreSQL it
// logs both generic plans, the ones a prepared statement settles on:
//
//	GPUSUITE_TEST_ENGINE=postgres go test -run '^$' -bench ForeignGPUs -benchtime 6x -v ./internal/store/
func BenchmarkForeignGPUs(b *testing.B) {
	const n = 10000
	s, _ := lastHourLedger(b, n, 4)
	ctx := context.Background()
	forms := []struct{ name, q string }{{"plain", foreignSQL}, {"own", foreignSQL}}
	if s.pg != nil {
		forms[1].q = foreignPG
		for _, f := range forms {
			b.Logf("%s, the last hour:\n%s", f.name, genericPlan(b, s, f.q, packFloor(lastHourNow-3_600_000), lastHourNow))
		}
	}
	for range 3 {
		for _, f := range forms {
			b.Run(fmt.Sprintf("gpus=%d/%s", n, f.name), func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					got, err := s.foreignGPUs(ctx, f.q, lastHourNow-3_600_000, lastHourNow, 0)
					if err != nil {
						b.Fatal(err)
					}
					if len(got) != 0 {
						b.Fatalf("%d GPUs with foreign processes, want none", len(got))
					}
				}
			})
		}
	}
}

// genericPlan is PostgreSQL's generic plan of q (placeholders ?) run
// with args, from EXPLAIN ANALYZE on one connection of its own.
func genericPlan(b testing.TB, s *Ledger, q string, args ...int64) string {
	b.Helper()
	ctx := context.Background()
	db, err := sql.Open("pgx", s.Path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for i := range 2 {
		q = strings.Replace(q, "?", fmt.Sprintf("$%d", i+1), 1)
	}
	for _, stmt := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE q(bigint, bigint) AS ` + q} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			b.Fatalf("%v\n%s", err, stmt)
		}
	}
	rows, err := conn.QueryContext(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, COSTS OFF) EXECUTE q(%d, %d)`, args[0], args[1]))
	var plan []string
	err = eachRow(rows, err, func(r batchRows) error {
		var line string
		err := r.Scan(&line)
		plan = append(plan, line)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
