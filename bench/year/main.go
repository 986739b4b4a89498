// Command year generates a year of a 1,000-GPU cluster and ingests it
// once into a fresh accounting database (bench/year.sh; docs/performance.md,
// "store and ingest"). It is a benchmark, not part of make test.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/footprint"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "year: %v\n", err)
		os.Exit(exitcode.Failure)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("year", flag.ContinueOnError)
	dir := fs.String("dir", "/var/tmp/gpusuite-year", "where the database (gpuacct.db) and the generated files go")
	days := fs.Int("days", 365, "days of jobs")
	nodes := fs.Int("nodes", 125, "GPU servers")
	gpus := fs.Int("gpus", 8, "GPUs per server")
	jobs := fs.Int("jobs-per-node-day", 44, "about how many jobs a server runs a day (125 × 44 × 365 ≈ 2 M)")
	users := fs.Int("users", 300, "users")
	accounts := fs.Int("accounts", 40, "Slurm accounts")
	partitions := fs.Int("partitions", 4, "partitions (at most 4)")
	sampleDays := fs.Int("sample-days", 7, "days of raw samples before the end (retention is 30)")
	interval := fs.Duration("sample-interval", time.Minute, "sampling interval of the raw samples")
	seed := fs.Int64("seed", 2026, "random seed")
	endFlag := fs.String("end", "", "end of the data set, YYYY-MM-DD (UTC; default: today)")
	storeURL := fs.String("store-url", "", "an empty PostgreSQL database (postgres://...) to fill instead of -dir's gpuacct.db")
	if err := fs.Parse(args); err != nil {
		return err
	}
	end := time.Now().UTC().Truncate(24 * time.Hour)
	if *endFlag != "" {
		t, err := time.Parse("2006-01-02", *endFlag)
		if err != nil {
			return fmt.Errorf("-end: %w", err)
		}
		end = t
	}
	dbPath := filepath.Join(*dir, "gpuacct.db")
	if *storeURL != "" && !store.IsPostgresURL(*storeURL) {
		return fmt.Errorf("-store-url: must start with postgres:// or postgresql://")
	}
	if _, err := os.Stat(dbPath); err == nil && *storeURL == "" {
		return fmt.Errorf("%s exists: remove it (and its -wal, -shm, .lock) to make a new one", dbPath)
	}
	incoming := filepath.Join(*dir, "incoming")
	if err := os.RemoveAll(incoming); err != nil {
		return err
	}
	if err := os.MkdirAll(incoming, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(*dir, 0o755); err != nil {
		return err
	}
	o := gendata.YearOptions{Cluster: "c1", Nodes: *nodes, GPUsPerNode: *gpus, End: end, Days: *days, JobsPerNodeDay: *jobs,
		Users: *users, Accounts: *accounts, Partitions: *partitions, SampleDays: *sampleDays, SampleInterval: *interval, Seed: *seed}
	fmt.Fprintf(out, "# %s, %d CPUs: %d nodes × %d GPUs, %d days to %s, ~%d jobs/node/day, %d users, %d accounts, %d partitions, raw samples for the last %d days at %s\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), *nodes, *gpus, *days, end.Format("2006-01-02"), *jobs, *users, *accounts, *partitions, *sampleDays, *interval)
	g0 := time.Now()
	truth, err := gendata.Year(incoming, o)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	gen := time.Since(g0)
	_, inBytes, _ := footprint.Dir(incoming) // the bytes are a figure shown, not a check: a file gone is not an error here
	fmt.Fprintf(out, "generated in %s: %d jobs, %d events, %d job × GPU aggregates, %d raw samples; %d files, %.1f GiB\n",
		gen.Round(time.Second), truth.Jobs, truth.Events, truth.AggregateRecords, truth.Samples, truth.Files, float64(inBytes)/(1<<30))

	cfg := config.Default()
	cfg.Store.Path, cfg.Store.URL = dbPath, *storeURL
	cfg.Ingest.Incoming = incoming
	cfg.Ingest.Quarantine = filepath.Join(*dir, "quarantine")
	cfg.Ingest.Archive = filepath.Join(*dir, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	cfg.Agent.Interval = config.Dur(*interval) // ingest holds segments to the agents' interval
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Path: dbPath, URL: *storeURL, Journal: cfg.Store.JournalMode, BusyTimeout: cfg.Store.BusyTimeout.Duration})
	if err != nil {
		return err
	}
	defer s.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	i0 := time.Now()
	res, err := ingest.New(ingest.Deps{Store: s, Config: cfg, Log: log, UID: os.Getuid()}).Pass(ctx)
	took := time.Since(i0)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	fmt.Fprintf(out, "ingest, one pass: %s: %d files, %d records (%.0f records/s), %d samples stored, %d quarantined, %d refused\n",
		took.Round(time.Second), res.Files, res.Records, float64(res.Records)/took.Seconds(), res.Samples, res.Quarantined, res.Refused)
	nJobs, alloc, err := s.JobTotals(ctx)
	if err != nil {
		return err
	}
	if nJobs != int64(truth.Jobs) || alloc != truth.AllocGPUS {
		return fmt.Errorf("ledger differs from the generated truth: jobs %d/%d, allocated GPU-s %d/%d", nJobs, truth.Jobs, alloc, truth.AllocGPUS)
	}
	fmt.Fprintf(out, "ground truth matched: %d jobs, %d allocated GPU-seconds (%.0f GPU-hours)\n", nJobs, alloc, float64(alloc)/3600)
	rows, err := footprint.Rows(ctx, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "DB %s: %.2f GiB; rows: %s\n", s.Path, float64(s.Size())/(1<<30), rows)
	q0 := time.Now()
	months, err := s.UsageByMonth(ctx, "account")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "teams by month over rollup_daily: %s (%d rows)\n", time.Since(q0).Round(time.Millisecond), len(months))
	readme := fmt.Sprintf(`gpuacct.db: a generated year of a 1,000-GPU cluster, for benchmarking reports.

Made by bench/year.sh (go run ./bench/year %s) on %s.
Data set: cluster c1, %d nodes (gpu001...) × %d GPUs (H100, simulated UUIDs),
%d days ending %s (UTC), ~%d jobs per node per day, %d users (userNNN),
%d accounts (acctNN), %d partitions; job events and one final job × GPU
aggregate per job and GPU for every job; raw samples only for the last %d
days at %s (retention is 30 days). Seed %d.
Jobs %d, allocated GPU-hours %.0f; ingested in one pass in %s.
Open it read-only (sqlite3 -readonly, store.Options{ReadOnly: true});
make a new one with bench/year.sh after removing this directory.
`, strings.Join(args, " "), time.Now().UTC().Format(time.RFC3339), *nodes, *gpus, *days, end.Format("2006-01-02"), *jobs, *users, *accounts, *partitions,
		*sampleDays, *interval, *seed, nJobs, float64(alloc)/3600, took.Round(time.Second))
	return os.WriteFile(filepath.Join(*dir, "README.txt"), []byte(readme), 0o644)
}
