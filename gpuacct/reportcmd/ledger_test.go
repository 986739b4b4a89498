package reportcmd

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// These tests build their ledgers with the real ingest, which (through
// the web dashboard) imports package report: they live outside it.

// ledger generates a simulated cluster's records (real hook code for the
// events, the agent's record types for samples and aggregates) and
// ingests them with the real ingest pass into a new ledger of the engine
// under test; it returns the ledger's location (path or URL).
func ledger(tb testing.TB, root string, o gendata.Options) (string, gendata.Truth) {
	tb.Helper()
	return ledgerAt(tb, root, ledgerdb.NewLedger(tb), o)
}

// ledgerAt is ledger into l.
func ledgerAt(tb testing.TB, root string, l ledgerdb.Ledger, o gendata.Options) (string, gendata.Truth) {
	tb.Helper()
	if err := os.Chmod(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.Path, cfg.Store.URL = filepath.Join(root, "gpuacct.db"), l.URL
	if l.Path != "" {
		cfg.Store.Path = l.Path
	}
	cfg.Ingest.Incoming = filepath.Join(root, "incoming")
	cfg.Ingest.Quarantine = filepath.Join(root, "quarantine")
	cfg.Ingest.Archive = filepath.Join(root, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	if o.Interval > 0 {
		cfg.Agent.Interval = config.Dur(o.Interval) // ingest holds segments to it
	}
	if err := os.MkdirAll(cfg.Ingest.Incoming, 0o755); err != nil {
		tb.Fatal(err)
	}
	truth, err := gendata.Generate(cfg.Ingest.Incoming, o)
	if err != nil {
		tb.Fatal(err)
	}
	now := o.Start.Add(o.Duration).Add(time.Hour)
	if err := ingestAt(cfg, now); err != nil {
		tb.Fatal(err)
	}
	return cfg.Store.Location(), truth
}

func ingestAt(cfg config.Config, now time.Time) error {
	st, err := openWriter(cfg.Store.Location())
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = ingest.New(ingest.Deps{Store: st, Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background())
	return err
}

// sampled is a small ledger with samples and aggregates, made by the
// real hook, record and ingest code.
func sampled(t *testing.T) (string, gendata.Truth, time.Time) {
	t.Helper()
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	o := gendata.Options{Cluster: "c1", Nodes: 2, GPUsPerNode: 4, Start: start, Duration: 12 * time.Hour, Interval: 60 * time.Second,
		JobsPerNode: 12, HookEvents: true, Aggregates: true, Seed: 4}
	path, truth := ledger(t, t.TempDir(), o)
	return path, truth, start.Add(13 * time.Hour)
}

func TestJobTextJSONAndPlot(t *testing.T) {
	path, truth, now := sampled(t)
	// One idle job and one busy job of the generated set.
	var idle, busy *gendata.Job
	for i := range truth.JobList {
		j := &truth.JobList[i]
		if j.Util == 0 && idle == nil {
			idle = j
		}
		if j.Util >= 50 && len(j.GPUs) > 1 && busy == nil {
			busy = j
		}
	}
	if idle == nil || busy == nil {
		t.Fatal("the generated set lacks an idle or a busy job")
	}
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, "job", strconv.FormatUint(idle.ID, 10), dbOpt(path), "--tz", "UTC"); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, w := range []string{"Job " + strconv.FormatUint(idle.ID, 10) + " on c1: completed", "user " + idle.User, "UTILIZATION OVER THE JOB", "▁", "were idle most of the job"} {
		if !strings.Contains(text, w) {
			t.Errorf("job text lacks %q:\n%s", w, text)
		}
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "job", strconv.FormatUint(busy.ID, 10), "--json", dbOpt(path)); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Job       string  `json:"job"`
		User      string  `json:"user"`
		GPUs      int64   `json:"gpus"`
		AllocGPUH float64 `json:"alloc_gpu_hours"`
		ElapsedS  int64   `json:"elapsed_s"`
		Detail    []struct {
			UUID     string   `json:"uuid"`
			Source   string   `json:"source"`
			UtilMean *float64 `json:"util_mean_pct"`
		} `json:"gpus_detail"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	// GPU-hours to their unit's 6 decimals, without float noise.
	want := math.Round(float64(int64(len(busy.GPUs))*(busy.End-busy.Start))/3600*1e6) / 1e6
	if j.User != busy.User || j.GPUs != int64(len(busy.GPUs)) || j.ElapsedS != busy.End-busy.Start || j.AllocGPUH != want {
		t.Errorf("job JSON %+v, want user %s, %d GPUs, %d s, %v GPU-h", j, busy.User, len(busy.GPUs), busy.End-busy.Start, want)
	}
	if len(j.Detail) != len(busy.GPUs) || j.Detail[0].Source != "aggregate" || j.Detail[0].UtilMean == nil || *j.Detail[0].UtilMean < float64(busy.Util)/2 {
		t.Errorf("GPU detail %+v (job util %d)", j.Detail, busy.Util)
	}
	// Plots: a PNG that decodes, an SVG that parses.
	dir := t.TempDir()
	for _, name := range []string{"job.png", "job.svg"} {
		d, out, _ = testDeps(now, nil)
		p := filepath.Join(dir, name)
		if err := run(t, d, "plot", strconv.FormatUint(busy.ID, 10), "-o", p, dbOpt(path)); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out.String()) != p {
			t.Errorf("plot printed %q, want the path", out.String())
		}
		checkImage(t, p)
	}
	p := filepath.Join(dir, "teams.png")
	d, _, _ = testDeps(now, nil)
	if err := run(t, d, "plot", "--report", dbOpt(path), "--start", "2026-03-01", "--end", "2026-03-04", "--period", "day", "-o", p); err != nil {
		t.Fatal(err)
	}
	checkImage(t, p)
	d, _, _ = testDeps(now, nil)
	if err := run(t, d, "plot", strconv.FormatUint(busy.ID, 10), "-o", filepath.Join(dir, "x.gif"), dbOpt(path)); err == nil || !strings.Contains(err.Error(), "name it .png or .svg") {
		t.Errorf("gif: %v", err)
	}
}

func checkImage(t *testing.T, p string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(p, ".png") {
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
			t.Errorf("%s is %v: too small to read", p, b)
		}
		return
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("%s: %v", p, err)
			}
			break
		}
	}
	if !bytes.Contains(data, []byte("<svg")) {
		t.Errorf("%s has no <svg>", p)
	}
}

func TestExport(t *testing.T) {
	path, truth, now := sampled(t)
	args := []string{dbOpt(path), "--tz", "UTC", "--start", "2026-03-01", "--end", "2026-03-03"}
	d, out, errb := testDeps(now, nil)
	if err := run(t, d, append([]string{"export", "jobs"}, args...)...); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != truth.Jobs+1 || strings.Join(recs[0], ",") != strings.Join(report.ExportColumns["jobs"], ",") {
		t.Fatalf("%d rows, header %v; want %d jobs", len(recs)-1, recs[0], truth.Jobs)
	}
	var alloc int64
	for _, r := range recs[1:] {
		n, _ := strconv.ParseInt(r[15], 10, 64)
		alloc += n
	}
	if alloc != truth.AllocGPUS {
		t.Errorf("exported alloc %d GPU-s, truth %d", alloc, truth.AllocGPUS)
	}
	if errb.Len() != 0 {
		t.Errorf("a pipe export wrote to stderr: %q", errb.String())
	}
	// Samples, one JSON-lines file per node, with the progress bar on.
	dir := t.TempDir()
	d, out, errb = testDeps(now, nil)
	d.StderrTTY = func() bool { return true }
	if err := run(t, d, append([]string{"export", "samples", "--format", "jsonl", "--split-dir", dir}, args...)...); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 2 {
		t.Fatalf("files %v, want one per node", files)
	}
	n := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var s map[string]any
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if s["node"] != strings.TrimSuffix(filepath.Base(f), ".jsonl") {
				t.Fatalf("%s holds a sample of %v", f, s["node"])
			}
			n++
		}
	}
	if n != truth.Samples {
		t.Errorf("%d samples exported, %d generated", n, truth.Samples)
	}
	if !strings.Contains(errb.String(), "export samples [") || out.Len() != 0 {
		t.Errorf("progress %q, stdout %d bytes", errb.String(), out.Len())
	}
	d, _, _ = testDeps(now, nil)
	if err := run(t, d, "export", "things", dbOpt(path)); err == nil || err.Error() != `export: unknown export "things": use jobs, gpus or samples` {
		t.Errorf("unknown export: %v", err)
	}
}

// BenchmarkReportYear: a 1,000-GPU cluster (125 nodes × 8 GPUs, about
// 2 million jobs a year). GPUSUITE_BENCH_DAYS days (default 30) go through
// the real hook, record and ingest code; the ledger is then replicated by
// SQL, shifted in time, to a whole year (jobs, job_nodes, job_hours and
// both rollups). Measured: `report teams --period month` over the year and
// `gpuacct job` as the built binary (GPUSUITE_BIN) runs them, wall time,
// beside the sqlite3 CLI doing the same aggregation over the jobs table.
func BenchmarkReportYear(b *testing.B) {
	days := 30
	if v, err := strconv.Atoi(os.Getenv("GPUSUITE_BENCH_DAYS")); err == nil && v > 0 {
		days = v
	}
	bin := os.Getenv("GPUSUITE_BIN")
	if bin == "" {
		// make bench builds into bin/ first; otherwise build it here.
		bin = filepath.Join("..", "..", "bin")
		if _, err := os.Stat(filepath.Join(bin, "gpuacct")); err != nil {
			bin = b.TempDir()
			if out, err := exec.Command("go", "build", "-o", bin, "../../gpuacct").CombinedOutput(); err != nil {
				b.Fatalf("build gpuacct: %v: %s", err, out)
			}
		}
	}
	root := b.TempDir()
	if keep := os.Getenv("GPUSUITE_BENCH_KEEP"); keep != "" {
		// The ledger stays there for bench/report-zones.sh.
		if err := os.MkdirAll(keep, 0o755); err != nil {
			b.Fatal(err)
		}
		root = keep
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g0 := time.Now()
	// The SQLite file: its size and the sqlite3 CLI are measured too.
	path, truth := ledgerAt(b, root, ledgerdb.Ledger{Path: filepath.Join(root, "gpuacct.db")}, gendata.Options{Cluster: "c1", Nodes: 125, GPUsPerNode: 8, Start: start,
		Duration: time.Duration(days) * 24 * time.Hour, JobsPerNode: 44 * days, Seed: 12})
	b.Logf("generated and ingested %d days: %d jobs in %s", days, truth.Jobs, time.Since(g0).Round(time.Second))
	r0 := time.Now()
	reportfixture.ReplicateYear(b, path, days)
	count := func(tbl string) int64 { return ledgerdb.Scalar[int64](b, path, `SELECT count(*) FROM `+tbl) }
	jobs, daily, hourly := count("jobs"), count("rollup_daily"), count("rollup_hourly")
	someJob := ledgerdb.Scalar[int64](b, path, `SELECT job_id FROM jobs ORDER BY id DESC LIMIT 1`)
	fi, _ := os.Stat(path)
	b.Logf("replicated to 365 days in %s: %d jobs, rollup_daily %d rows, rollup_hourly %d rows, DB %.0f MiB",
		time.Since(r0).Round(time.Second), jobs, daily, hourly, float64(fi.Size())/(1<<20))

	wall := func(name string, args ...string) time.Duration {
		var ds []time.Duration
		for i := 0; i < 7; i++ {
			c0 := time.Now()
			out, err := exec.Command(name, args...).CombinedOutput()
			if err != nil {
				b.Fatalf("%s %v: %v: %s", name, args, err, out)
			}
			ds = append(ds, time.Since(c0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	gpuacct := filepath.Join(bin, "gpuacct")
	env := []string{dbOpt(path), "--tz", "UTC", "--start", "2026-01-01", "--end", "2027-01-01"}
	teams := wall(gpuacct, append([]string{"report", "teams", "--period", "month", "--format", "csv"}, env...)...)
	teamsIn := func(zone string) time.Duration {
		return wall(gpuacct, append([]string{"report", "teams", "--period", "month", "--format", "csv"}, dbOpt(path), "--tz", zone, "--start", "2026-01-01", "--end", "2027-01-01")...)
	}
	teamsTokyo, teamsStJohns := teamsIn("Asia/Tokyo"), teamsIn("America/St_Johns")
	job := wall(gpuacct, "job", strconv.FormatInt(someJob, 10), dbOpt(path))
	const cliTeams = `SELECT strftime('%Y-%m', start, 'unixepoch') AS month, account, sum(alloc_gpu_s)/3600.0, sum(used_gpu_s)/3600.0, count(*) FROM jobs WHERE ignored = 0 GROUP BY month, account;`
	cli := wall("sqlite3", "-readonly", path, cliTeams)
	// In-process, without process start.
	db, err := report.OpenDB(context.Background(), path, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	w := timespec.Window{Start: start, End: start.AddDate(1, 0, 0)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Report(context.Background(), report.Request{Kind: "teams", Window: w, Period: timespec.Month}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.Logf("median of 7 runs, wall: gpuacct report teams --period month (year, UTC) %s; the same in Asia/Tokyo %s, in America/St_Johns %s; gpuacct job %s; sqlite3 CLI, same aggregation over jobs %s",
		teams.Round(time.Millisecond), teamsTokyo.Round(time.Millisecond), teamsStJohns.Round(time.Millisecond), job.Round(time.Millisecond), cli.Round(time.Millisecond))
}
