package reportfixture

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// LongJob is one job run sampled for a long time, for the bounds of a
// job's page: the worst job was 8 GPUs × 20 days at 10 s.
type LongJob struct {
	ID       uint64
	GPUs     int
	Seconds  int64 // from T0
	Interval int64 // seconds between samples
	// Running leaves the job without an end (its figures then come from
	// the samples).
	Running bool
}

// Samples is how many samples BuildLongJob writes.
func (j LongJob) Samples() int64 { return int64(j.GPUs) * (j.Seconds / j.Interval) }

// BuildLongJob makes a ledger (BuildLedger) holding job j on node gpu01
// from T0 and writes its samples as rows with one statement (RowSamples),
// so that a million samples take seconds rather than an ingest, then has
// the writer pack them and sum them into the series buckets
// (PackRowSamples) as it would have. Utilization runs 0..100 over each 17 samples (0 is idle),
// memory peaks once, power varies; every 1000th sample is shared with job
// j.ID+1 (a jobs list, every other one idle for j), so that both paths of
// a series are read.
func BuildLongJob(t testing.TB, j LongJob, now time.Time) string {
	t.Helper()
	end := T0 + j.Seconds
	job := Job{ID: j.ID, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: j.GPUs, Start: T0, End: end}
	if j.Running {
		job.End = 0
	}
	path := BuildLedger(t, []Job{job}, now)
	RowSamples(t, path)
	ledgerdb.Tx(t, path, func(exec func(string, ...any)) {
		exec(`INSERT INTO samples(gpu_id, t_ms, interval_ms, job, restart, jobs, idle, util, mem_used_mib, power_mw)
 WITH RECURSIVE s(k) AS (SELECT CAST(0 AS INTEGER) UNION ALL SELECT k + 1 FROM s WHERE k + 1 < ?)
 SELECT g.gpu_id, (? + s.k * ?) * 1000, ? * 1000, ?, 0,
  CASE WHEN s.k % 1000 = 999 THEN '[{"job":' || ? || ',"restart":0,"share":0.5,"idle":' || CASE WHEN s.k % 2000 = 1999 THEN 'true' ELSE 'false' END ||
   '},{"job":' || ? || ',"restart":0,"share":0.5,"idle":false}]' END,
  CASE WHEN s.k % 17 = 0 THEN 1 ELSE 0 END, (s.k % 17) * 6, CASE WHEN s.k = ? THEN 79000 ELSE 1000 + s.k % 500 END, 100000 + (s.k % 13) * 20000
 FROM s, job_gpus g WHERE g.job = (SELECT id FROM jobs WHERE job_id = ?)`,
			// The ids in the jobs list are text: PostgreSQL types a
			// parameter next to || as text.
			j.Seconds/j.Interval, T0, j.Interval, j.Interval, j.ID, fmt.Sprint(j.ID), fmt.Sprint(j.ID+1), j.Seconds/j.Interval/3, j.ID)
	})
	PackRowSamples(t, path)
	return path
}

// RowSamples makes a table samples of rows in the ledger at path, the
// layout before packed samples, for samples a test writes by SQL;
// PackRowSamples then packs them.
func RowSamples(t testing.TB, path string) {
	t.Helper()
	engine := store.EngineSQLite
	if strings.HasPrefix(path, "postgres") {
		engine = store.EnginePostgres
	}
	ledgerdb.Exec(t, path, store.RowSamplesSQL(engine))
}

// PackRowSamples packs the rows of RowSamples' table into the ledger's
// packs as the writer keeps them, and has it sum them into the series
// buckets (store.Ledger.RebuildSeriesBuckets): a long job's series reads
// the buckets.
func PackRowSamples(t testing.TB, path string) {
	t.Helper()
	o := store.Options{Path: path}
	if strings.HasPrefix(path, "postgres") {
		o = store.Options{URL: path}
	}
	st, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PackRowSamples(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.RebuildSeriesBuckets(context.Background()); err != nil {
		t.Fatal(err)
	}
}
