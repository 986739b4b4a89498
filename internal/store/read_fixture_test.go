package store

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// readFixture is a small ledger for the read methods: two nodes of one
// cluster, three job runs (one ignored, one still running), one job seen
// only by its end, rollups at each grain and two passes. It is written
// with plain SQL so that the readers are tested against known rows, not
// against what the writer happens to produce; it is opened read-only, as
// report opens it.
func readFixture(t *testing.T) *Ledger {
	t.Helper()
	return ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name, last_record, last_ingest) VALUES (1, 'c1', 'n1', 1000, 1100), (2, 'c1', 'n2', NULL, 900)`,
		`INSERT INTO gpus(id, uuid, node_id, idx, minor, model, mem_total_mib) VALUES (1, 'GPU-a', 1, 0, 0, 'A100', 81920), (2, 'GPU-b', 2, NULL, NULL, 'H100', NULL)`,
		`INSERT INTO jobs(id, cluster, job_id, restart, array_job_id, array_task_id, user, account, partition, nodes, gpus, start, end, state,
		 end_estimated, ignored, ignore_reason, alloc_gpu_s, used_gpu_s, idle_gpu_s, energy_mj) VALUES
		 (1, 'c1', 100, 0, NULL, NULL, 'alice', 'physics', 'gpu', 'n1', 1, 3600, 7200, 'completed', 0, 0, NULL, 3600, 1800.5, 100, 5000),
		 (2, 'c1', 105, 0, 101, 3, 'bob', 'chem', 'long', 'n1,n2', 2, 7200, NULL, 'running', 0, 0, NULL, 7200, 0, 0, 0),
		 (3, 'c1', 100, 1, NULL, NULL, 'alice', 'physics', 'gpu', 'n1', 1, 7300, 9000, 'failed', 1, 1, 'test run', 1700, 10, 1600, 7)`,
		`INSERT INTO jobs(id, cluster, job_id, user, end, state) VALUES (4, 'c1', 102, 'carol', 5000, 'completed')`,
		`INSERT INTO job_nodes(job, node_id, gpus, model, start, end, end_estimated, end_source, exit_code, quality) VALUES
		 (1, 1, 1, 'A100', 3600, 7200, 0, 'epilog', 0, ''),
		 (2, 1, 1, 'A100', 7200, NULL, 0, NULL, NULL, ''),
		 (2, 2, 1, 'H100', 7200, NULL, 0, NULL, NULL, 'no_prolog')`,
		`INSERT INTO job_gpus(job, gpu_id, node_id, minor, energy_start_mj, energy_end_mj, agg_seq, agg_final, sample_s, util_s, util_max,
		 mem_max_mib, mem_total_mib, energy_mj, idle_s, quality) VALUES
		 (1, 1, 1, 0, 100, 5100, 1, 1, 3600, 1800, 90, 1000, NULL, 5000, 10, '{"util":2}'),
		 (2, 2, 2, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, NULL, 40960, NULL, 0, '')`,
		`INSERT INTO job_hours(job, node_id, hour, alloc_gpu_s, sample_s, jobs) VALUES (1, 1, 1, 3600, 3000, 1), (1, 1, 2, 0, 500, 0)`,
		`INSERT INTO samples(gpu_id, t_ms, interval_ms, job, restart, jobs, idle, util, mem_util, mem_used_mib, power_mw, energy_delta_mj, missing) VALUES
		 (1, 3600000, 1000, 100, 0, NULL, 0, 50, 10, 1000, 200000, 200, NULL),
		 (1, 3601000, 1000, 100, 0, '[{"job":100,"restart":0,"share":0.5,"idle":true}]', 1, NULL, NULL, NULL, NULL, NULL, 'util'),
		 (1, 3602000, 1000, 999, 0, NULL, 0, 70, 10, 900, 210000, 210, NULL),
		 (1, 7200000, 1000, 100, 0, NULL, 0, 60, 10, 900, 210000, 210, NULL)`,
		`INSERT INTO rollup_hourly(hour, cluster, user, account, partition, node_id, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs) VALUES
		 (1, 'c1', 'alice', 'physics', 'gpu', 1, 'A100', 0, 3600, 1800, 100, 3000, 5000, 1),
		 (1, 'c1', 'alice', 'physics', 'gpu', 2, 'A100', 0, 400, 200, 0, 300, 50, 0),
		 (2, 'c1', 'bob', 'chem', 'long', 2, 'H100', 0, 3600, 0, 0, 0, 0, 1),
		 (2, 'c1', 'alice', 'physics', 'gpu', 1, 'A100', 1, 1700, 10, 1600, 0, 7, 1)`,
		`INSERT INTO rollup_hourly_sum(hour, cluster, user, account, partition, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs) VALUES
		 (1, 'c1', 'alice', 'physics', 'gpu', 'A100', 0, 4000, 2000, 100, 3300, 5050, 1),
		 (2, 'c1', 'bob', 'chem', 'long', 'H100', 0, 3600, 0, 0, 0, 0, 1),
		 (2, 'c1', 'alice', 'physics', 'gpu', 'A100', 1, 1700, 10, 1600, 0, 7, 1)`,
		`INSERT INTO rollup_daily(day, cluster, user, account, partition, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs) VALUES
		 (0, 'c1', 'alice', 'physics', 'gpu', 'A100', 0, 4000, 2000, 100, 3300, 5050, 1),
		 (1, 'c1', 'dave', 'bio', 'gpu', 'A100', 0, 10, 1, 0, 0, 0, 0)`,
		`INSERT INTO rollup_monthly(month, cluster, user, account, partition, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs) VALUES
		 (0, 'c1', 'alice', 'physics', 'gpu', 'A100', 0, 4000, 2000, 100, 3300, 5050, 1),
		 (0, 'c1', 'erin', 'math', 'gpu', 'H100', 1, 5, 0, 0, 0, 0, 1)`,
		`INSERT INTO passes(id, started, finished, ok, quarantined, refused, error, files_left, oldest_left) VALUES
		 (1, 1000, 1010, 1, 2, 1, NULL, 0, NULL),
		 (2, 2000, 2005, 0, 0, 3, 'disk full
		 and more', 3, 1500)`,
	)
}

// emptyStore is a fresh ledger with no rows, opened read-only.
func emptyStore(t *testing.T) *Ledger {
	t.Helper()
	return ledgerOf(t)
}

// ledgerOf is a ledger written by stmts (plain SQL), opened read-only.
func ledgerOf(t *testing.T, stmts ...string) *Ledger {
	t.Helper()
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	// The fixtures' samples are of January 1970: on PostgreSQL, the
	// writer makes the month's partition as it opens.
	w, err := Open(ctx, Options{Path: l.Path, URL: l.URL, Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	// Samples are written as rows and packed as the ledger keeps them.
	for _, q := range append([]string{RowSamplesSQL(w.Engine)}, stmts...) {
		if _, err := w.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("fixture: %v\n%s", err, q)
		}
	}
	if err := w.PackRowSamples(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, Options{Path: l.Path, URL: l.URL, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func pi(v int64) *int64 { return &v }

func pf(v float64) *float64 { return &v }
