package ingest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// BenchmarkIngestDay is the "done when" data set: 16 nodes × 8 GPUs
// shipping a simulated day (events through the real hook code, 10 s
// samples, job × GPU aggregates), ingested by one pass and checked against
// the ground truth; then the sqlite3 command-line tool imports the same
// sample rows from CSV into the same schema in one transaction.
func BenchmarkIngestDay(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchDay(b)
	}
}

func benchDay(b *testing.B) {
	b.StopTimer()
	root := b.TempDir()
	os.Chmod(root, 0o755)
	e := &env{root: root}
	e.cfg = benchConfig(root)
	os.MkdirAll(e.cfg.Ingest.Incoming, 0o755)
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	g0 := time.Now()
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 16, GPUsPerNode: 8, Start: start,
		Duration: 24 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 312, HookEvents: true, Aggregates: true, Seed: 11})
	if err != nil {
		b.Fatal(err)
	}
	gen := time.Since(g0)
	// Where the time goes, part 1: reading and validating alone.
	p0 := time.Now()
	v := Validator{Now: start.Add(25 * time.Hour), MaxFuture: time.Hour}
	files, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Incoming, "*", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Parse(filepath.Base(filepath.Dir(f)), filepath.Base(f), data); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
	}
	parse := time.Since(p0)
	var inSize int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			inSize += st.Size()
		}
	}
	// GPUSUITE_TEST_ENGINE=postgres: the ledger is a new database on the
	// test server, and psql's \copy is the baseline.
	pg := ledgerdb.Engine(b) == store.EnginePostgres
	if pg {
		e.cfg.Store.URL = ledgerdb.NewPostgresDB(b)
	}
	s, err := store.Open(context.Background(), store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.StartTimer()
	i0, cpu0 := time.Now(), cpuTime()
	res, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return start.Add(25 * time.Hour) }, UID: os.Getuid()}).Pass(context.Background())
	ingest, ingestCPU := time.Since(i0), cpuTime()-cpu0
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	x := totalsB(b, s)
	if x.Jobs != int64(truth.Jobs) || x.Samples != int64(truth.Samples) || x.Alloc != truth.AllocGPUS || !near(x.Used, truth.Used) || x.Energy != truth.EnergyMJ {
		b.Fatalf("ledger differs from ground truth: %+v vs jobs %d samples %d alloc %d used %v energy %d", x, truth.Jobs, truth.Samples, truth.AllocGPUS, truth.Used, truth.EnergyMJ)
	}
	csvPath := filepath.Join(root, "samples.csv")
	if err := exportCSV(s, csvPath); err != nil {
		b.Fatal(err)
	}
	base := baselineImport(b, root, csvPath, pg)
	if base.rows != x.Samples {
		b.Fatalf("%s imported %d rows, want %d", base.name, base.rows, x.Samples)
	}
	sps := float64(truth.Samples) / ingest.Seconds()
	b.ReportMetric(sps, "samples/s")
	b.ReportMetric(float64(truth.Samples)/base.wall.Seconds(), base.metric+"-samples/s")
	b.ReportMetric(ingest.Seconds()/base.wall.Seconds(), "x-"+base.metric)
	b.Logf("data set: %d nodes × %d GPUs, 1 day: %d jobs, %d samples, %d files (%.0f MiB), generated in %s", 16, 8, truth.Jobs, truth.Samples, len(files), float64(inSize)/(1<<20), gen.Round(time.Millisecond))
	b.Logf("gpuacct ingest pass (%s): %s (%.0f samples/s; %d files, %d records); of which read+decode+validate alone %s", s.Engine, ingest.Round(time.Millisecond), sps, res.Files, res.Records, parse.Round(time.Millisecond))
	b.Logf("%s of the same %d sample rows from CSV (%.0f MiB), one transaction: %s (%.0f samples/s)", base.name, base.rows, fileMiB(csvPath), base.wall.Round(time.Millisecond), float64(base.rows)/base.wall.Seconds())
	b.Logf("CPU time (user+system, all threads): gpuacct pass %s, %s %s (%.2f×)", ingestCPU.Round(time.Millisecond), base.metric, base.cpu.Round(time.Millisecond), ingestCPU.Seconds()/base.cpu.Seconds())
	b.Logf("ratio gpuacct / %s: %.2f×; DB size %.1f MiB (%.0f bytes/sample incl. jobs and rollups)", base.name, ingest.Seconds()/base.wall.Seconds(), float64(s.Size())/(1<<20), float64(s.Size())/float64(truth.Samples))
	b.Logf("ground truth matched: jobs %d, allocated %d GPU-s, used %.1f GPU-s, energy %d mJ", x.Jobs, x.Alloc, x.Used, x.Energy)
}

// baseline is what a database's own command-line tool took to import the
// samples.
type baseline struct {
	name, metric string
	wall, cpu    time.Duration
	rows         int64
}

// baselineImport loads the CSV into the samples table of a new, migrated
// ledger in one transaction with the engine's own tool: sqlite3's .import
// (WAL, synchronous=FULL, as the store runs), or psql's \copy, into the
// month's partition made first, as the store's writer makes it.
func baselineImport(b *testing.B, root, csvPath string, pg bool) baseline {
	o := store.Options{Path: filepath.Join(root, "cli.db")}
	if pg {
		o.URL = ledgerdb.NewPostgresDB(b)
	}
	c, err := store.Open(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	c.Close()
	loc := o.Path
	var cmd *exec.Cmd
	bl := baseline{name: "sqlite3 CLI .import", metric: "cli"}
	if pg {
		loc, bl.name, bl.metric = o.URL, "psql \\copy", "psql"
		script := fmt.Sprintf("\\set ON_ERROR_STOP on\n%s;\nBEGIN;\n\\copy samples FROM '%s' WITH (FORMAT csv)\nCOMMIT;\n",
			store.RowSamplesSQL(store.EnginePostgres), csvPath)
		cmd = exec.Command("psql", "-X", "-q", "-d", o.URL)
		cmd.Stdin = strings.NewReader(script)
	} else {
		script := ".bail on\nPRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\n.mode csv\n" + store.RowSamplesSQL(store.EngineSQLite) + ";\nBEGIN;\n.import " + csvPath + " samples\nCOMMIT;\n"
		cmd = exec.Command("sqlite3", o.Path)
		cmd.Stdin = strings.NewReader(script)
	}
	c0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", bl.name, err, out)
	}
	bl.wall = time.Since(c0)
	bl.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	bl.rows = ledgerdb.Scalar[int64](b, loc, `SELECT count(*) FROM samples`)
	return bl
}

// cpuTime is the CPU time this process has used, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fileMiB(p string) float64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return float64(st.Size()) / (1 << 20)
}

func benchConfig(root string) configT {
	e := newEnvAt(root)
	e.Ingest.Keep = "delete"
	return e
}

func totalsB(b *testing.B, s *store.Ledger) totals {
	var x totals
	ledgerdb.Row(b, s.Path, `SELECT count(*), coalesce(sum(CASE WHEN end IS NOT NULL THEN alloc_gpu_s END), 0), coalesce(sum(used_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM jobs`, nil,
		&x.Jobs, &x.Alloc, &x.Used, &x.Energy)
	x.Samples = ledgerdb.Scalar[int64](b, s.Path, `SELECT coalesce(sum(n), 0) FROM sample_packs`)
	return x
}

// exportCSV writes the ledger's samples as rows of the samples table of
// before packed samples (store.RowSamplesSQL) as CSV (RFC 4180 quoting,
// NULL as empty), in column order.
func exportCSV(s *store.Ledger, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	err = s.StoredSamples(context.Background(), func(vals []any) error {
		for i, v := range vals {
			if i > 0 {
				w.WriteByte(',')
			}
			switch x := v.(type) {
			case nil:
			case string:
				if strings.ContainsAny(x, ",\"\n") {
					w.WriteString(`"` + strings.ReplaceAll(x, `"`, `""`) + `"`)
				} else {
					w.WriteString(x)
				}
			default:
				fmt.Fprint(w, x)
			}
		}
		return w.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// BenchmarkIngestYear ingests the job events of a 1,000-GPU cluster
// (125 nodes × 8, about 2 million jobs a year) for GPUSUITE_BENCH_DAYS days
// (default 14), then measures the month-by-team query over the daily rollup
// and the same aggregation by the sqlite3 CLI over the jobs table.
func BenchmarkIngestYear(b *testing.B) {
	days := 14
	if v, err := strconv.Atoi(os.Getenv("GPUSUITE_BENCH_DAYS")); err == nil && v > 0 {
		days = v
	}
	for i := 0; i < b.N; i++ {
		benchYear(b, days)
	}
}

func benchYear(b *testing.B, days int) {
	b.StopTimer()
	root := b.TempDir()
	os.Chmod(root, 0o755)
	cfg := benchConfig(root)
	os.MkdirAll(cfg.Ingest.Incoming, 0o755)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g0 := time.Now()
	// 2,000,000 jobs / 365 days / 125 nodes ≈ 44 jobs per node per day.
	truth, err := gendata.Generate(cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 125, GPUsPerNode: 8, Start: start,
		Duration: time.Duration(days) * 24 * time.Hour, JobsPerNode: 44 * days, Seed: 12})
	if err != nil {
		b.Fatal(err)
	}
	gen := time.Since(g0)
	s, err := store.Open(context.Background(), store.Options{Path: cfg.Store.Path})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := start.Add(time.Duration(days)*24*time.Hour + time.Hour)
	b.StartTimer()
	i0 := time.Now()
	res, err := New(Deps{Store: s, Config: cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background())
	ingest := time.Since(i0)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	x := totalsB(b, s)
	if x.Jobs != int64(truth.Jobs) || x.Alloc != truth.AllocGPUS {
		b.Fatalf("ledger differs from ground truth: jobs %d/%d alloc %d/%d", x.Jobs, truth.Jobs, x.Alloc, truth.AllocGPUS)
	}
	ctx := context.Background()
	if err := s.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	tables, err := s.RowCounts(ctx)
	if err != nil {
		b.Fatal(err)
	}
	count := func(tbl string) int64 {
		for _, c := range tables {
			if c.Table == tbl {
				return c.Rows
			}
		}
		b.Fatalf("no row count for %s", tbl)
		return 0
	}
	q0 := time.Now()
	months, err := s.UsageByMonth(ctx, "account")
	if err != nil {
		b.Fatal(err)
	}
	n := len(months)
	qTime := time.Since(q0)
	const cliJobs = `SELECT strftime('%Y-%m', start, 'unixepoch') AS month, account, sum(alloc_gpu_s)/3600.0, sum(used_gpu_s)/3600.0, count(*) FROM jobs WHERE ignored = 0 GROUP BY month, account;`
	c0 := time.Now()
	cmd := exec.Command("sqlite3", "-readonly", cfg.Store.Path, cliJobs)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("sqlite3: %v: %s", err, out)
	}
	cliTime := time.Since(c0)
	size := s.Size()
	scale := 365.0 / float64(days)
	b.ReportMetric(float64(truth.Jobs)/ingest.Seconds(), "jobs/s")
	b.Logf("1,000-GPU cluster (125 nodes × 8 GPUs), %d days: %d jobs, %d event files, generated in %s", days, truth.Jobs, res.Files, gen.Round(time.Millisecond))
	b.Logf("ingest: %s (%.0f jobs/s, %.0f events/s); DB %.1f MiB: jobs %d, job_nodes %d, job_gpus %d, job_hours %d, rollup_hourly %d, rollup_daily %d rows",
		ingest.Round(time.Millisecond), float64(truth.Jobs)/ingest.Seconds(), float64(res.Files)/ingest.Seconds(), float64(size)/(1<<20),
		count("jobs"), count("job_nodes"), count("job_gpus"), count("job_hours"), count("rollup_hourly"), count("rollup_daily"))
	b.Logf("teams by month over rollup_daily: %s (%d rows); the same by the sqlite3 CLI over the jobs table: %s", qTime.Round(time.Microsecond), n, cliTime.Round(time.Millisecond))
	b.Logf("extrapolated to a year (×%.1f, linear): %.0f jobs, ingest %s, DB %.1f GiB without raw samples, rollup_daily %.0f rows",
		scale, float64(truth.Jobs)*scale, (time.Duration(float64(ingest) * scale)).Round(time.Second), float64(size)*scale/(1<<30), float64(count("rollup_daily"))*scale)
}

// BenchmarkIngestBigSegments: `gpuacct ingest` (this test binary standing
// in) takes ten segments of about 60 MB each, one per node, in one pass;
// it reports the process's peak resident memory, which read-ahead and
// decoding bound (docs/store.md: 1.5 × the bytes in flight, at most
// 2 × ingest.max_file_size).
func BenchmarkIngestBigSegments(b *testing.B) {
	for range b.N {
		b.StopTimer()
		root := b.TempDir()
		os.Chmod(root, 0o755)
		cfg := benchConfig(root)
		os.MkdirAll(cfg.Ingest.Incoming, 0o755)
		start := time.Now().UTC().Truncate(time.Hour).Add(-90 * time.Hour)
		truth, err := gendata.Generate(cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 10, GPUsPerNode: 8, Start: start,
			Duration: 80 * time.Hour, Segment: 80 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 40, HookEvents: true, Seed: 12})
		if err != nil {
			b.Fatal(err)
		}
		segs, _ := filepath.Glob(filepath.Join(cfg.Ingest.Incoming, "*", "samples.*"))
		var biggest, total int64
		for _, p := range segs {
			if st, err := os.Stat(p); err == nil {
				biggest = max(biggest, st.Size())
				total += st.Size()
			}
		}
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		// runCLI takes keep from the file, as gpuacct does.
		cfgFile := filepath.Join(root, "gpusuite.toml")
		if err := os.WriteFile(cfgFile, []byte("[ingest]\nkeep = \"delete\"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(exe, "--config", cfgFile, "ingest", "--db", cfg.Store.Path, "--incoming", cfg.Ingest.Incoming,
			"--quarantine", cfg.Ingest.Quarantine, "--archive", cfg.Ingest.Archive, "--sacct", "")
		cmd.Env = append(os.Environ(), "GPUSUITE_TEST_GPUACCT=1")
		b.StartTimer()
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatalf("ingest: %v\n%s", err, out)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
		s, err := store.Open(context.Background(), store.Options{Path: cfg.Store.Path, ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		x := totalsB(b, s)
		s.Close()
		if x.Samples != int64(truth.Samples) {
			b.Fatalf("%d samples stored, want %d", x.Samples, truth.Samples)
		}
		b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
		b.Logf("%d segments of up to %.1f MiB (%.0f MiB in all, %d samples): ingest in %s, peak RSS %.0f MiB (%.1f× the largest segment)",
			len(segs), float64(biggest)/(1<<20), float64(total)/(1<<20), truth.Samples, took.Round(time.Millisecond), float64(rss)/(1<<20), float64(rss)/float64(biggest))
	}
}
