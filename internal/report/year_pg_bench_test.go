package report_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// BenchmarkReportYearPostgres: the year of BenchmarkReportYear (gpuacct/
// reportcmd: 125 nodes × 8 GPUs, GPUSUITE_BENCH_DAYS days, default 30,
// through the real ingest, replicated by SQL to 365 days) as a SQLite file,
// copied by `gpuacct migrate` into a new database on the PostgreSQL test
// server (GPUSUITE_TEST_PG); then `gpuacct report teams --period month`
// over the year on each, the built binary (GPUSUITE_BIN), wall time with
// process start, median of 7, the two engines taking turns. The SQLite
// year is kept in GPUSUITE_BENCH_YEAR_DIR when set (built there once,
// reused by later runs: it takes minutes).
func BenchmarkReportYearPostgres(b *testing.B) {
	days := 30
	if v, err := strconv.Atoi(os.Getenv("GPUSUITE_BENCH_DAYS")); err == nil && v > 0 {
		days = v
	}
	bin := benchBin(b)
	path := yearLedger(b, days)
	jobs := ledgerdb.Scalar[int64](b, path, `SELECT count(*) FROM jobs`)
	daily := ledgerdb.Scalar[int64](b, path, `SELECT count(*) FROM rollup_daily`)
	monthly := ledgerdb.Scalar[int64](b, path, `SELECT count(*) FROM rollup_monthly`)
	hourly := ledgerdb.Scalar[int64](b, path, `SELECT count(*) FROM rollup_hourly`)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("SQLite year %s: %d jobs, rollup_monthly %d, rollup_daily %d, rollup_hourly %d rows, %.0f MiB",
		path, jobs, monthly, daily, hourly, float64(fi.Size())/(1<<20))

	gpuacct := filepath.Join(bin, "gpuacct")
	pg := ledgerdb.NewPostgresDB(b)
	m0 := time.Now()
	if out, err := exec.Command(gpuacct, "migrate", "--from", "sqlite:"+path, "--to", pg).CombinedOutput(); err != nil {
		b.Fatalf("gpuacct migrate: %v: %s", err, out)
	}
	b.Logf("gpuacct migrate to PostgreSQL (verified): %s", time.Since(m0).Round(time.Second))
	pgJobs := ledgerdb.Scalar[int64](b, pg, `SELECT count(*) FROM jobs`)
	if pgJobs != jobs {
		b.Fatalf("PostgreSQL holds %d jobs, the SQLite file %d", pgJobs, jobs)
	}

	for _, tz := range []string{"UTC", "Asia/Tokyo"} {
		args := []string{"report", "teams", "--period", "month", "--start", "2026-01-01", "--end", "2027-01-01", "--tz", tz, "--format", "csv"}
		sqlite := append(args[:len(args):len(args)], "--db", path)
		postgres := append(args[:len(args):len(args)], "--store-url", pg)
		var ds, dp []time.Duration
		var outS, outP []byte
		for range 7 {
			d, out := wallRun(b, gpuacct, sqlite)
			ds, outS = append(ds, d), out
			d, out = wallRun(b, gpuacct, postgres)
			dp, outP = append(dp, d), out
		}
		if !bytes.Equal(outS, outP) {
			b.Fatalf("--tz %s: the reports differ:\nSQLite:\n%s\nPostgreSQL:\n%s", tz, outS, outP)
		}
		ms, mp := median(ds), median(dp)
		if tz == "UTC" {
			b.ReportMetric(float64(mp.Microseconds())/1000, "pg-ms")
			b.ReportMetric(float64(ms.Microseconds())/1000, "sqlite-ms")
			b.ReportMetric(mp.Seconds()/ms.Seconds(), "x-sqlite")
		}
		b.Logf("gpuacct report teams --period month, year, --tz %s (%d bytes of CSV, equal): PostgreSQL %s, SQLite %s (median of 7, wall; %.2f×)",
			tz, len(outP), mp.Round(100*time.Microsecond), ms.Round(100*time.Microsecond), mp.Seconds()/ms.Seconds())
	}
}

// benchBin is the folder holding the gpuacct binary: GPUSUITE_BIN, or one
// built here.
func benchBin(b *testing.B) string {
	if bin := os.Getenv("GPUSUITE_BIN"); bin != "" {
		return bin
	}
	bin := b.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin, "../../gpuacct").CombinedOutput(); err != nil {
		b.Fatalf("build gpuacct: %v: %s", err, out)
	}
	return bin
}

func wallRun(b *testing.B, name string, args []string) (time.Duration, []byte) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout = &out
	cmd.Stderr = &out
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		b.Fatalf("%s %v: %v: %s", name, args, err, out.Bytes())
	}
	return d, out.Bytes()
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// yearLedger returns the SQLite year's path, building it unless
// GPUSUITE_BENCH_YEAR_DIR already holds one of as many days.
func yearLedger(b *testing.B, days int) string {
	dir := os.Getenv("GPUSUITE_BENCH_YEAR_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "gpuacct.db")
	// The mark is written last: a build cut short is built again.
	mark := filepath.Join(dir, "built-"+strconv.Itoa(days)+"-days")
	if _, err := os.Stat(mark); err == nil {
		return path
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", filepath.Join(dir, "incoming")} {
		if err := os.RemoveAll(p); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.Path = path
	cfg.Ingest.Incoming = filepath.Join(dir, "incoming")
	cfg.Ingest.Quarantine = filepath.Join(dir, "quarantine")
	cfg.Ingest.Archive = filepath.Join(dir, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	if err := os.MkdirAll(cfg.Ingest.Incoming, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g0 := time.Now()
	truth, err := gendata.Generate(cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 125, GPUsPerNode: 8, Start: start,
		Duration: time.Duration(days) * 24 * time.Hour, JobsPerNode: 44 * days, Seed: 12})
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	now := start.Add(time.Duration(days)*24*time.Hour + time.Hour)
	_, err = ingest.New(ingest.Deps{Store: st, Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background())
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated and ingested %d days: %d jobs in %s", days, truth.Jobs, time.Since(g0).Round(time.Second))
	r0 := time.Now()
	reportfixture.ReplicateYear(b, path, days)
	b.Logf("replicated to 365 days in %s", time.Since(r0).Round(time.Second))
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}
