package ingest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// env is a test's directory layout and configuration.
type env struct {
	root string
	cfg  config.Config
}

type configT = config.Config

// newEnvAt is the test configuration rooted at root.
func newEnvAt(root string) config.Config {
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(root, "gpuacct.db")
	cfg.Ingest.Incoming = filepath.Join(root, "incoming")
	cfg.Ingest.Quarantine = filepath.Join(root, "quarantine")
	cfg.Ingest.Archive = filepath.Join(root, "archive")
	cfg.Ingest.Sacct = ""
	return cfg
}

// newEnv is a test's layout with a new ledger on the engine under test
// (ledgerdb.NewLedger): store.url is set on PostgreSQL, store.path on
// SQLite.
func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(root, "gpuacct.db")
	cfg.Store.URL = ledgerdb.NewLedger(t).URL
	cfg.Ingest.Incoming = filepath.Join(root, "incoming")
	cfg.Ingest.Quarantine = filepath.Join(root, "quarantine")
	cfg.Ingest.Archive = filepath.Join(root, "archive")
	cfg.Ingest.Sacct = ""
	if err := os.MkdirAll(cfg.Ingest.Incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	return &env{root: root, cfg: cfg}
}

func (e *env) open(t *testing.T) *store.Ledger {
	t.Helper()
	s, err := store.Open(context.Background(), e.storeOptions())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeOptions opens the test's ledger: store.url when set, else
// store.path, as ingest.Setup does.
func (e *env) storeOptions() store.Options {
	return store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (e *env) pass(t *testing.T, s *store.Ledger, now time.Time) Result {
	t.Helper()
	res, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background())
	if err != nil {
		t.Fatalf("pass: %v", err)
	}
	return res
}

type totals struct {
	Jobs, Alloc, Samples  int64
	Used, Idle, SampleS   float64
	RollAlloc, RollJobs   int64
	DailyAlloc, DailyJobs int64
	MonthAlloc, MonthJobs int64
	RollUsed, DailyUsed   float64
	MonthUsed             float64
	Energy                int64
}

func readTotals(t *testing.T, s *store.Ledger) totals {
	t.Helper()
	var x totals
	q := func(query string, dst ...any) {
		t.Helper()
		ledgerdb.Row(t, s.Path, query, nil, dst...)
	}
	q(`SELECT count(*), coalesce(sum(CASE WHEN end IS NOT NULL THEN alloc_gpu_s END), 0), coalesce(sum(used_gpu_s), 0), coalesce(sum(idle_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM jobs`, &x.Jobs, &x.Alloc, &x.Used, &x.Idle, &x.Energy)
	q(`SELECT coalesce(sum(n), 0) FROM sample_packs`, &x.Samples)
	q(`SELECT coalesce(sum(sample_s), 0) FROM job_hours`, &x.SampleS)
	q(`SELECT coalesce(sum(alloc_gpu_s), 0), coalesce(sum(jobs), 0), coalesce(sum(used_gpu_s), 0) FROM rollup_hourly`, &x.RollAlloc, &x.RollJobs, &x.RollUsed)
	q(`SELECT coalesce(sum(alloc_gpu_s), 0), coalesce(sum(jobs), 0), coalesce(sum(used_gpu_s), 0) FROM rollup_daily`, &x.DailyAlloc, &x.DailyJobs, &x.DailyUsed)
	q(`SELECT coalesce(sum(alloc_gpu_s), 0), coalesce(sum(jobs), 0), coalesce(sum(used_gpu_s), 0) FROM rollup_monthly`, &x.MonthAlloc, &x.MonthJobs, &x.MonthUsed)
	return x
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// checkTruth compares the store with the generated ground truth.
func checkTruth(t *testing.T, s *store.Ledger, truth gendata.Truth) {
	t.Helper()
	x := readTotals(t, s)
	if x.Jobs != int64(truth.Jobs) {
		t.Errorf("jobs: got %d, want %d", x.Jobs, truth.Jobs)
	}
	if x.Alloc != truth.AllocGPUS {
		t.Errorf("allocated GPU-s of ended jobs: got %d, want %d", x.Alloc, truth.AllocGPUS)
	}
	if x.Samples != int64(truth.Samples) {
		t.Errorf("samples: got %d, want %d", x.Samples, truth.Samples)
	}
	if !near(x.Used, truth.Used) || !near(x.Idle, truth.Idle) || !near(x.SampleS, truth.SampleS) {
		t.Errorf("used/idle/sampled: got %v/%v/%v, want %v/%v/%v", x.Used, x.Idle, x.SampleS, truth.Used, truth.Idle, truth.SampleS)
	}
	if x.Energy != truth.EnergyMJ {
		t.Errorf("energy: got %d mJ, want %d", x.Energy, truth.EnergyMJ)
	}
	if !near(x.RollUsed, truth.Used) || !near(x.DailyUsed, truth.Used) || !near(x.MonthUsed, truth.Used) {
		t.Errorf("rollup used: hourly %v, daily %v, monthly %v, want %v", x.RollUsed, x.DailyUsed, x.MonthUsed, truth.Used)
	}
	if x.RollJobs != int64(truth.Jobs) || x.DailyJobs != int64(truth.Jobs) || x.MonthJobs != int64(truth.Jobs) {
		t.Errorf("rollup jobs: hourly %d, daily %d, monthly %d, want %d", x.RollJobs, x.DailyJobs, x.MonthJobs, truth.Jobs)
	}
	checkMonths(t, s)
	// Rollups also hold open jobs up to now; compare them with the jobs table.
	all := ledgerdb.Scalar[int64](t, s.Path, `SELECT sum(alloc_gpu_s) FROM jobs`)
	if x.RollAlloc != all || x.DailyAlloc != all || x.MonthAlloc != all {
		t.Errorf("rollup allocated: hourly %d, daily %d, monthly %d, jobs %d", x.RollAlloc, x.DailyAlloc, x.MonthAlloc, all)
	}
	var perAcct = map[string]int64{}
	ledgerdb.Query(t, s.Path, `SELECT account, sum(alloc_gpu_s) FROM jobs WHERE end IS NOT NULL GROUP BY account`, nil, func(scan func(...any)) {
		var a string
		var v int64
		scan(&a, &v)
		perAcct[a] = v
	})
	for a, v := range truth.PerAccount {
		if perAcct[a] != v {
			t.Errorf("account %s: got %d, want %d", a, perAcct[a], v)
		}
	}
}

func TestSmallClusterMatchesTruth(t *testing.T) {
	e := newEnv(t)
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 2, GPUsPerNode: 8, Start: start,
		Duration: 3 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 20, HookEvents: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := e.open(t)
	defer s.Close()
	res := e.pass(t, s, start.Add(3*time.Hour+time.Minute))
	if res.Files != truth.Files || res.Quarantined != 0 || res.Refused != 0 {
		t.Fatalf("pass: %+v, want %d files", res, truth.Files)
	}
	checkTruth(t, s, truth)
	// A second pass over nothing changes nothing.
	e.pass(t, s, start.Add(3*time.Hour+2*time.Minute))
	checkTruth(t, s, truth)
}

func TestAggregatesStored(t *testing.T) {
	e := newEnv(t)
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 4, Start: start,
		Duration: 2 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 8, Aggregates: true, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	s := e.open(t)
	defer s.Close()
	e.pass(t, s, start.Add(3*time.Hour))
	checkTruth(t, s, truth)
	var n int
	var util float64
	ledgerdb.Row(t, s.Path, `SELECT count(*), sum(util_s) FROM job_gpus WHERE agg_final = 1`, nil, &n, &util)
	if n == 0 || !near(util, truth.Used) {
		t.Errorf("aggregates: %d rows, util_s %v, want %v", n, util, truth.Used)
	}
	// An older version (lower seq) of an aggregate does not replace a newer one.
	ledgerdb.Exec(t, s.Path, `UPDATE job_gpus SET agg_seq = 5`)
	ents, _ := os.ReadDir(e.cfg.Ingest.Archive)
	if len(ents) == 0 {
		t.Fatal("nothing archived")
	}
	files, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Archive, "*", "gpu001", "jobgpu.*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		var a map[string]any
		json.Unmarshal(data, &a)
		a["util_s"] = 0.0
		out, _ := json.Marshal(a)
		writeFile(t, filepath.Join(e.cfg.Ingest.Incoming, "gpu001", filepath.Base(f)), out)
	}
	e.pass(t, s, start.Add(3*time.Hour))
	if util = ledgerdb.Scalar[float64](t, s.Path, `SELECT sum(util_s) FROM job_gpus`); !near(util, truth.Used) {
		t.Errorf("stale aggregate replaced a newer one: util_s %v", util)
	}
}

// checkMonths compares rollup_monthly row by row with rollup_daily summed
// per UTC month: the two are kept by separate writes, so a move or an
// ignore that reached one and not the other shows here, not only in the
// totals.
func checkMonths(t *testing.T, s *store.Ledger) {
	t.Helper()
	type fig struct {
		alloc, energy, jobs int64
		used, idle, sample  float64
	}
	// read sums the rows per key; the days' rows go under their UTC
	// month's first day (rollup_monthly's month), worked out here so that
	// the query is the same on both engines.
	read := func(q string, month func(int64) int64) map[string]fig {
		out := map[string]fig{}
		ledgerdb.Query(t, s.Path, q, nil, func(scan func(...any)) {
			var at int64
			var k string
			var f fig
			scan(&at, &k, &f.alloc, &f.used, &f.idle, &f.sample, &f.energy, &f.jobs)
			k = strconv.FormatInt(month(at), 10) + "|" + k
			o := out[k]
			o.alloc, o.energy, o.jobs = o.alloc+f.alloc, o.energy+f.energy, o.jobs+f.jobs
			o.used, o.idle, o.sample = o.used+f.used, o.idle+f.idle, o.sample+f.sample
			out[k] = o
		})
		for k, f := range out {
			if f == (fig{}) {
				delete(out, k)
			}
		}
		return out
	}
	const cols = `cluster || '|' || user || '|' || account || '|' || partition || '|' || model || '|' || ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs`
	days := read(`SELECT day, `+cols+` FROM rollup_daily`, func(day int64) int64 {
		d := time.Unix(day*86400, 0).UTC()
		return time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
	})
	months := read(`SELECT month, `+cols+` FROM rollup_monthly`, func(m int64) int64 { return m })
	if len(days) == 0 {
		t.Errorf("rollup_daily is empty")
	}
	for k, d := range days {
		m := months[k]
		if d.alloc != m.alloc || d.energy != m.energy || d.jobs != m.jobs || !near(m.used, d.used) || !near(m.idle, d.idle) || !near(m.sample, d.sample) {
			t.Errorf("rollup_monthly %s: %+v, the days sum to %+v", k, m, d)
		}
	}
	for k, m := range months {
		if _, ok := days[k]; !ok {
			t.Errorf("rollup_monthly %s: %+v, no days under it", k, m)
		}
	}
}
