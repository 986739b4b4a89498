package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/ingest/gendata"
	"github.com/aicloud/gpusuite/internal/report/ignorereq"
	"github.com/aicloud/gpusuite/internal/store"
)

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
	if err := run(t, d, "job", strconv.FormatUint(idle.ID, 10), "--db", path, "--tz", "UTC"); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, w := range []string{"Job " + strconv.FormatUint(idle.ID, 10) + " on c1: completed", "user " + idle.User, "UTILIZATION OVER THE JOB", "▁", "were idle most of the job"} {
		if !strings.Contains(text, w) {
			t.Errorf("job text lacks %q:\n%s", w, text)
		}
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "job", strconv.FormatUint(busy.ID, 10), "--json", "--db", path); err != nil {
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
	want := float64(int64(len(busy.GPUs))*(busy.End-busy.Start)) / 3600
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
		if err := run(t, d, "plot", strconv.FormatUint(busy.ID, 10), "-o", p, "--db", path); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out.String()) != p {
			t.Errorf("plot printed %q, want the path", out.String())
		}
		checkImage(t, p)
	}
	p := filepath.Join(dir, "teams.png")
	d, _, _ = testDeps(now, nil)
	if err := run(t, d, "plot", "--report", "--db", path, "--start", "2026-03-01", "--end", "2026-03-04", "--period", "day", "-o", p); err != nil {
		t.Fatal(err)
	}
	checkImage(t, p)
	d, _, _ = testDeps(now, nil)
	if err := run(t, d, "plot", strconv.FormatUint(busy.ID, 10), "-o", filepath.Join(dir, "x.gif"), "--db", path); err == nil || !strings.Contains(err.Error(), "name it .png or .svg") {
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
	args := []string{"--db", path, "--tz", "UTC", "--start", "2026-03-01", "--end", "2026-03-03"}
	d, out, errb := testDeps(now, nil)
	if err := run(t, d, append([]string{"export", "jobs"}, args...)...); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != truth.Jobs+1 || strings.Join(recs[0], ",") != strings.Join(exportColumns["jobs"], ",") {
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
	if err := run(t, d, "export", "things", "--db", path); err == nil || err.Error() != `export: unknown export "things": use jobs, gpus or samples` {
		t.Errorf("unknown export: %v", err)
	}
}

func TestIgnoreFlow(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	task := int64(3)
	path := buildLedger(t, []fxJob{
		{id: 10, user: "alice", acct: "vision", part: "gpu", node: "gpu01", gpus: 2, start: t0, end: t0 + 3600},
		{id: 11, user: "bob", acct: "vision", part: "gpu", node: "gpu01", gpus: 1, start: t0, end: t0 + 3600},
		{id: 503, arrayJob: 500, task: &task, user: "bob", acct: "vision", part: "gpu", node: "gpu02", gpus: 1, start: t0, end: t0 + 1800},
	}, now)
	reqs := t.TempDir()
	total := func() string {
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, "report", "teams", "--db", path, "--tz", "UTC", "--start", "2026-01-01", "--end", "2026-01-02", "-P", "-n"); err != nil {
			t.Fatal(err)
		}
		return strings.Split(out.String(), "|")[1]
	}
	if got := total(); got != "3.5" {
		t.Fatalf("before: %s GPU-h", got)
	}
	// Not root, not the service user: refused.
	d, _, _ := testDeps(now, nil)
	d.Euid = func() int { return 4242 }
	if err := run(t, d, "ignore", "10", "--reason", "x", "--db", path, "--requests", reqs); err == nil || !strings.Contains(err.Error(), "only root or the service user") {
		t.Fatalf("non-root: %v", err)
	}
	// No writer runs: applied at once.
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, "ignore", "10", "500_3", "--reason", "vendor benchmark", "--db", path, "--requests", reqs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "applied") {
		t.Errorf("ignore said %q", out.String())
	}
	if got := total(); got != "1" {
		t.Errorf("after ignoring 2 GPU-h and 0.5 GPU-h: %s GPU-h, want 1", got)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "ignore", "--list", "--db", path, "--requests", reqs, "--format", "csv"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "10,alice,vision") || !strings.Contains(out.String(), "500_3,bob") || !strings.Contains(out.String(), "vendor benchmark (by root (sudo by alice)") {
		t.Errorf("ignore --list:\n%s", out.String())
	}
	// A writer runs (serve): the request waits in the spool.
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "unignore", "10", "--db", path, "--requests", reqs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "queued") {
		t.Errorf("unignore with serve running said %q", out.String())
	}
	if got := total(); got != "1" {
		t.Errorf("a queued request changed the totals: %s", got)
	}
	// serve's pass applies it.
	n, err := ignorereq.Apply(context.Background(), st, ignorereq.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return uid == 0 || uid == os.Getuid() }})
	st.Close()
	if err != nil || n != 1 {
		t.Fatalf("apply: %d, %v", n, err)
	}
	if got := total(); got != "3" {
		t.Errorf("after unignore: %s GPU-h, want 3", got)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "ignore", "--list", "--log", "--requests", reqs, "--format", "csv", "--db", path); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "ignore,10 500_3,root (sudo by alice),applied,vendor benchmark") || !strings.Contains(lines[2], "unignore,10,") {
		t.Errorf("log:\n%s", out.String())
	}
	// A planted request (group-writable) is refused, not applied.
	planted := filepath.Join(reqs, "pending", "zz.json")
	os.WriteFile(planted, []byte(`{"schema":"gpusuite.ignore/v1","id":"zz","action":"ignore","jobs":["11"],"by":"mallory","uid":0,"time":"2026-01-01T00:00:00Z"}`), 0o666)
	os.Chmod(planted, 0o666)
	st, _ = store.Open(context.Background(), store.Options{Path: path})
	_, err = ignorereq.Apply(context.Background(), st, ignorereq.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return true }})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := total(); got != "3" {
		t.Errorf("a planted request was applied: %s GPU-h", got)
	}
}

func TestCheck(t *testing.T) {
	now := time.Unix(t0+3600, 0)
	path := buildLedger(t, []fxJob{{id: 1, user: "a", acct: "x", part: "gpu", node: "gpu01", gpus: 1, start: t0, end: t0 + 600},
		{id: 2, user: "a", acct: "x", part: "gpu", node: "gpu02", gpus: 1, start: t0, end: t0 + 3500}}, now)
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	st.DB.Exec(`INSERT INTO passes(started, finished, ok) VALUES(?, ?, 1)`, now.Unix()-120, now.Unix()-119)
	st.Close()
	d, out, _ := testDeps(now, nil)
	err = run(t, d, "check", "--db", path, "--stale", "15m", "--lag", "10m")
	if err == nil {
		t.Fatalf("a silent node passed: %s", out.String())
	}
	if got := strings.TrimSpace(out.String()); !strings.HasPrefix(got, "CRITICAL: node gpu01: no data for 50m0s") || strings.Count(got, "\n") != 0 {
		t.Errorf("check printed %q", got)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, "check", "--db", path, "--stale", "2h"); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	if !strings.HasPrefix(out.String(), "OK: 2 nodes, 0 silent") {
		t.Errorf("check printed %q", out.String())
	}
	// A failed last pass, and the lag.
	st, _ = store.Open(context.Background(), store.Options{Path: path})
	st.DB.Exec(`INSERT INTO passes(started, finished, ok, error) VALUES(?, ?, 0, 'disk full')`, now.Unix()-60, now.Unix()-59)
	st.Close()
	d, out, _ = testDeps(now.Add(time.Hour), nil)
	err = run(t, d, "check", "--db", path, "--stale", "3h", "--lag", "10m")
	if err == nil || !strings.Contains(out.String(), "ingest: last successful pass 1h2m0s ago") || !strings.Contains(out.String(), "failed: disk full") {
		t.Errorf("check: %v\n%s", err, out.String())
	}
	d, out, _ = testDeps(now, nil)
	err = run(t, d, "check", "--db", filepath.Join(t.TempDir(), "none.db"))
	if err == nil || !strings.HasPrefix(err.Error(), "CRITICAL: accounting database") {
		t.Errorf("missing db: %v", err)
	}
}
