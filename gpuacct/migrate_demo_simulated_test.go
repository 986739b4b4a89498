//go:build simulated

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/notecmd"
	"github.com/aicloud/gpusuite/gpuacct/reportcmd"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/web"
)

// The demo's ledger is small enough to copy and read in seconds and has
// everything a site's has: running and finished jobs, lost samples,
// energy counter resets, passes and a booking. Its weeks cross a month's
// end, so that PostgreSQL keeps its samples in two partitions and the
// monthly reports have two periods; a five-minute interval keeps the
// raw samples few.
const (
	demoWeeks    = 5
	demoNodes    = 2
	demoInterval = "5m"
)

// The reports read the demo's simulated weeks with a margin on both
// sides, and "now" is fixed two hours after they end: the jobs still
// running then and the ingest lag read the same on every run.
var (
	demoStart  = time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC) // gpuacct demo --start: its weeks end now without it
	demoEnd    = demoStart.Add(demoWeeks * 7 * 24 * time.Hour)
	demoNow    = demoEnd.Add(2 * time.Hour)
	demoWindow = []string{"--start", demoStart.AddDate(0, 0, -1).Format(time.DateOnly), "--end", demoEnd.AddDate(0, 0, 1).Format(time.DateOnly)}
)

// TestPostgresMigrateDemoReportsIdentical copies the demo's SQLite
// ledger to PostgreSQL with gpuacct migrate, then asks both ledgers for
// every report gpuacct writes (report of each kind and period, job,
// export, check, note list, plot) and every read endpoint of the JSON
// API: the answers must be the same bytes. A site that moves its ledger
// must not see its numbers change.
func TestPostgresMigrateDemoReportsIdentical(t *testing.T) {
	pg := ledgerdb.NewPostgresDB(t) // without a server: fails, not skips
	dir := t.TempDir()
	db, worst := demoLedger(t, dir)
	getenv := demoConfig(t, dir)

	var out, errb bytes.Buffer
	if code := run([]string{"gpuacct", "migrate", "--from", "sqlite:" + db, "--to", pg}, strings.NewReader(""), &out, &errb, getenv); code != 0 {
		t.Fatalf("gpuacct migrate: exit %d: %s", code, errb.String())
	}
	checkAllVerified(t, out.String())

	engines := []ledgerSide{{name: "sqlite", opt: "--db=" + db, loc: db}, {name: "postgres", opt: "--store-url=" + pg, loc: pg}}
	jobs := apiJobs(t, dir, engines[0])
	if len(jobs) < 10 || !strings.HasPrefix(jobs[0].Start, demoEnd.Format("2006-01")) || demoEnd.Month() == demoStart.Month() {
		t.Fatalf("the demo's ledger lists %d jobs in its weeks, the newest starting %s: want ten or more, into the next month", len(jobs), jobs[0].Start)
	}
	for _, c := range commandCases(worst, jobs) {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var got [2]cliResult
			for i, e := range engines {
				got[i] = e.command(t, getenv, c.args, c.files)
			}
			if got[0].code != c.code || got[1].code != c.code {
				t.Fatalf("exit %d on SQLite (%s), %d on PostgreSQL (%s), want %d", got[0].code, got[0].stderr, got[1].code, got[1].stderr, c.code)
			}
			if got[0].stdout == "" && len(got[0].files) == 0 {
				t.Fatalf("gpuacct %s wrote nothing on SQLite", strings.Join(c.args, " "))
			}
			if d := diff(got[0].stdout, got[1].stdout); d != "" {
				t.Errorf("gpuacct %s: stdout differs (-sqlite +postgres):\n%s", strings.Join(c.args, " "), d)
			}
			if d := cmp.Diff(sizes(got[0].files), sizes(got[1].files)); d != "" {
				t.Errorf("gpuacct %s: files differ (-sqlite +postgres):\n%s", strings.Join(c.args, " "), d)
			}
			for name, f := range got[0].files {
				if d := diff(f, got[1].files[name]); d != "" {
					t.Errorf("gpuacct %s: file %s differs (-sqlite +postgres):\n%s", strings.Join(c.args, " "), name, d)
				}
			}
		})
	}
	handlers := [2]http.Handler{engines[0].web(t, dir), engines[1].web(t, dir)}
	for _, path := range apiPaths(jobs) {
		t.Run(path, func(t *testing.T) {
			var got [2]apiAnswer
			for i, h := range handlers {
				got[i] = get(h, path, engines[i].loc)
			}
			if got[0].Code != http.StatusOK {
				t.Fatalf("GET %s on SQLite: %d %s", path, got[0].Code, got[0].Body)
			}
			if d := cmp.Diff(got[0], got[1]); d != "" {
				t.Errorf("GET %s differs (-sqlite +postgres):\n%s", path, d)
			}
		})
	}
}

// demoLedger runs gpuacct demo into dir and returns its ledger's path and
// the job whose detail the demo showed.
func demoLedger(t *testing.T, dir string) (db, worst string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := []string{"gpuacct", "demo", "--dir", dir, "--weeks", fmt.Sprint(demoWeeks), "--nodes", fmt.Sprint(demoNodes), "--interval", demoInterval,
		"--start", demoStart.Format(time.DateOnly)}
	if code := run(args, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("gpuacct demo: exit %d: %s", code, errb.String())
	}
	m := regexp.MustCompile(`(?m)^\$ gpuacct job (\S+) --tz UTC --db (\S+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("gpuacct demo printed no job command:\n%s", out.String())
	}
	return m[2], m[1]
}

// demoConfig writes a configuration whose ingest and request directories
// are the demo's (check and note list read them) and returns the
// environment that names it, and nothing else of this process's.
func demoConfig(t *testing.T, dir string) func(string) string {
	t.Helper()
	for _, d := range []string{"incoming", "quarantine", "requests"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "gpuacct.toml")
	toml := fmt.Sprintf("[ingest]\nincoming = %q\nquarantine = %q\n\n[report]\nrequests = %q\n",
		filepath.Join(dir, "incoming"), filepath.Join(dir, "quarantine"), filepath.Join(dir, "requests"))
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(k string) string {
		if k == config.EnvPath {
			return path
		}
		return ""
	}
}

// checkAllVerified reads gpuacct migrate's table: every table copied
// verified, the demo's tables among them, and the closing note.
func checkAllVerified(t *testing.T, out string) {
	t.Helper()
	rows := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] != "TABLE" {
			rows[f[0]] = f[3]
		}
	}
	for _, want := range []string{"nodes", "gpus", "jobs", "job_gpus", "sample_packs", "job_hours", "rollup_hourly", "rollup_hourly_sum", "rollup_daily", "rollup_monthly", "passes", "notes"} {
		if _, ok := rows[want]; !ok {
			t.Errorf("gpuacct migrate lists no table %s", want)
		}
	}
	for table, v := range rows {
		if v != "ok" {
			t.Errorf("gpuacct migrate: table %s verified %q, want ok", table, v)
		}
	}
	if !strings.Contains(out, "row counts and totals agree") {
		t.Errorf("gpuacct migrate's table lacks its verdict:\n%s", out)
	}
	if t.Failed() {
		t.Fatalf("gpuacct migrate printed:\n%s", out)
	}
}

// commandCase is one command line run on both ledgers. OUT in args is
// a directory of each run's own, whose files are compared too.
type commandCase struct {
	args  []string
	files bool
	// code is the exit both must give.
	code int
}

// commandCases is every report: each kind over each period, in each
// format and unit, the filters, job (text and JSON) for every job,
// export of each kind and format, check, note list and the plots.
func commandCases(worst string, jobs []apiJob) []commandCase {
	var cs []commandCase
	add := func(critical bool, files bool, args ...string) {
		c := commandCase{args: args, files: files}
		if critical {
			c.code = 2 // Nagios CRITICAL: the demo's nodes and ingest are silent by now
		}
		cs = append(cs, c)
	}
	win := func(args ...string) []string { return append(append(args, demoWindow...), "--tz", "UTC") }
	for _, k := range report.Kinds {
		for _, p := range []string{"", "day", "week", "month"} {
			if k == "jobs" && p != "" {
				continue // a job list has no periods
			}
			args := win("report", k, "--format", "json", "--limit", fmt.Sprint(report.MaxLimit))
			if p != "" {
				args = append(args, "--period", p)
			}
			add(false, false, args...)
		}
		for _, f := range []string{"table", "csv", "tsv"} {
			add(false, false, win("report", k, "--format", f, "--period", "week")...)
		}
		add(false, false, win("report", k, "-P")...)
	}
	for _, u := range []string{"minutes", "percent"} {
		add(false, false, win("report", "tree", "--units", u, "--period", "day")...)
	}
	add(false, false, win("report", "top", "--by", "teams", "--limit", "3", "--period", "day")...)
	// Days of a half-hour zone, and of one whose clocks go back on the
	// window's first day (America/New_York, 2026-11-01).
	for _, tz := range []string{"Asia/Kolkata", "America/New_York"} {
		add(false, false, append(win("report", "users", "--period", "day"), "--tz", tz)...)
		add(false, false, append(win("report", "tree", "--period", "week", "--format", "json"), "--tz", tz)...)
	}
	for _, s := range []string{"start", "alloc", "eff", "idle"} {
		add(false, false, win("report", "jobs", "--sort", s, "--limit", fmt.Sprint(report.MaxLimit), "--format", "json")...)
	}
	j := jobs[0]
	for _, f := range [][]string{{"--users", j.User}, {"--teams", j.Team}, {"--accounts", j.Account}, {"--partitions", j.Partition}, {"--clusters", j.Cluster}} {
		add(false, false, append(win("report", "users", "--period", "day", "--format", "json"), f...)...)
		add(false, false, append(win("report", "jobs", "--format", "json"), f...)...)
	}
	for _, j := range jobs {
		add(false, false, "job", j.Job, "--cluster", j.Cluster, "--tz", "UTC")
		add(false, false, "job", j.Job, "--cluster", j.Cluster, "--json")
	}
	for _, k := range []string{"jobs", "gpus", "samples"} {
		for _, f := range []string{"csv", "jsonl"} {
			add(false, false, win("export", k, "--format", f)...)
		}
	}
	add(false, true, win("export", "samples", "--split-dir", "OUT")...)
	add(false, true, win("export", "gpus", "--format", "jsonl", "--split-dir", "OUT")...)
	// The demo's last step ships and ingests at the real time, after the
	// fixed now: no node is stale and no pass is late, on either engine.
	add(false, false, "check", "--no-live")
	add(false, false, "check", "--no-live", "--stale", "1000h", "--lag", "1000h", "--forget", "0")
	add(false, false, "note", "list", "--all", "--tz", "UTC")
	add(false, false, "note", "list", "--all", "--format", "json")
	add(false, true, "plot", worst, "-o", "OUT/job.svg", "--tz", "UTC")
	add(false, true, "plot", worst, "-o", "OUT/job.png", "--tz", "UTC")
	add(false, true, win("plot", "--report", "--period", "day", "-o", "OUT/teams.svg")...)
	return cs
}

// ledgerSide is one engine's copy of the ledger.
type ledgerSide struct {
	name string
	// opt is the option that points a command at it; loc its location.
	opt, loc string
}

// cliResult is what one command did.
type cliResult struct {
	code           int
	stdout, stderr string
	// files are OUT's files by name.
	files map[string]string
}

// command runs gpuacct's report commands, as main wires them but with
// the clock fixed at demoNow, on this side's ledger.
func (s ledgerSide) command(t *testing.T, getenv func(string) string, args []string, files bool) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	now := func() time.Time { return demoNow }
	d := reportcmd.Deps{Stdout: &out, Stderr: &errb, Getenv: getenv, Now: now,
		Width: func() int { return 0 }, StderrTTY: func() bool { return false },
		Euid: func() int { return 65534 }, Username: func() string { return "nobody" }}
	nd := notecmd.Deps{Stdout: &out, Stderr: &errb, Getenv: getenv, Now: now,
		Euid: func() int { return 65534 }, Username: func() string { return "nobody" },
		LookupUser: func(uid int) (string, error) { return fmt.Sprintf("uid%d", uid), nil }}
	app := &cli.App{
		Name:  "gpuacct",
		Flags: []cli.Flag{cliwire.ConfigFlag()},
		Commands: []*cli.Command{reportcmd.ReportCommand(d), reportcmd.JobCommand(d), reportcmd.CheckCommand(d),
			reportcmd.ExportCommand(d), reportcmd.PlotCommand(d), notecmd.Command(nd)},
		Reader: strings.NewReader(""), Writer: &out, ErrWriter: &errb,
	}
	outDir := ""
	if files {
		outDir = t.TempDir()
	}
	full := []string{"gpuacct"}
	for _, a := range args {
		full = append(full, strings.Replace(a, "OUT", outDir, 1))
	}
	if args[0] == "note" {
		full = append(full[:3], append([]string{s.opt}, full[3:]...)...)
	} else {
		full = append(full, s.opt)
	}
	r := cliResult{code: cliwire.Run(app, full), stdout: out.String(), stderr: errb.String()}
	if files {
		// A command that names its file names each run's own.
		r.stdout = strings.ReplaceAll(r.stdout, outDir, "OUT")
		r.files = readDir(t, outDir)
	}
	return r
}

// diffMax is the size up to which two outputs are shown by cmp.Diff;
// beyond it (the raw samples run to megabytes) the first line that
// differs is shown instead, which takes no time.
const diffMax = 256 << 10

// diff is "" when a and b are the same, else what differs.
func diff(a, b string) string {
	if a == b {
		return ""
	}
	if len(a) <= diffMax && len(b) <= diffMax {
		return cmp.Diff(a, b)
	}
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; ; i++ {
		if i == len(la) || i == len(lb) || la[i] != lb[i] {
			line := func(l []string) string {
				if i < len(l) {
					return l[i]
				}
				return "(end)"
			}
			return fmt.Sprintf("first at line %d (of %d and %d):\n- %s\n+ %s", i+1, len(la), len(lb), line(la), line(lb))
		}
	}
}

// sizes is each file's size by name, to say which files differ first.
func sizes(files map[string]string) map[string]int {
	m := map[string]int{}
	for name, f := range files {
		m[name] = len(f)
	}
	return m
}

// readDir is every file in dir by name.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// web is gpuacct serve's dashboard handler on this side's ledger, with
// the clock fixed at demoNow and check's directories the demo's.
func (s ledgerSide) web(t *testing.T, dir string) http.Handler {
	t.Helper()
	cfg := config.Default()
	cfg.Ingest.Incoming, cfg.Ingest.Quarantine = filepath.Join(dir, "incoming"), filepath.Join(dir, "quarantine")
	h, err := web.New(web.Options{DB: s.loc, Location: time.UTC, Check: report.CheckOptionsFrom(cfg, time.Time{}),
		Now: func() time.Time { return demoNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// apiAnswer is what an API request answered; the ledger's own location
// (in /api/v1/health) reads LEDGER.
type apiAnswer struct {
	Code        int
	ContentType string
	Body        string
}

func get(h http.Handler, path, loc string) apiAnswer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	name, _ := json.Marshal(store.RedactURL(loc))
	body := strings.ReplaceAll(rec.Body.String(), string(name), `"LEDGER"`)
	return apiAnswer{Code: rec.Code, ContentType: rec.Header().Get("Content-Type"), Body: body}
}

// apiJob is the part of /api/v1/jobs's jobs the cases use.
type apiJob struct {
	Cluster   string `json:"cluster"`
	Job       string `json:"job"`
	User      string `json:"user"`
	Account   string `json:"account"`
	Team      string `json:"team"`
	Partition string `json:"partition"`
	Start     string `json:"start"`
	URL       string `json:"url"`
}

// apiJobs is every job of the demo's weeks, as the API lists them.
func apiJobs(t *testing.T, dir string, s ledgerSide) []apiJob {
	t.Helper()
	a := get(s.web(t, dir), "/api/v1/jobs?"+apiWindow().Encode()+"&limit=10000", s.loc)
	var list struct {
		Truncated bool     `json:"truncated"`
		Jobs      []apiJob `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(a.Body), &list); err != nil || a.Code != http.StatusOK || list.Truncated {
		t.Fatalf("GET /api/v1/jobs: %d (truncated %v, %v): %s", a.Code, list.Truncated, err, a.Body)
	}
	return list.Jobs
}

// apiWindow is demoWindow as query parameters.
func apiWindow() url.Values {
	return url.Values{"start": {demoWindow[1]}, "end": {demoWindow[3]}, "tz": {"UTC"}}
}

// apiPaths is every read endpoint of /api/v1/ over the ledger: each
// report kind over each period, the job lists, each job and its series,
// the nodes, the health and the notes.
func apiPaths(jobs []apiJob) []string {
	var ps []string
	with := func(path string, kv ...string) string {
		v := apiWindow()
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return path + "?" + v.Encode()
	}
	for _, k := range report.Kinds {
		for _, p := range []string{"", string(timespec.Day), string(timespec.Week), string(timespec.Month)} {
			if k == "jobs" && p != "" {
				continue
			}
			ps = append(ps, with("/api/v1/report/"+k, "period", p, "limit", fmt.Sprint(report.MaxLimit)))
		}
	}
	ps = append(ps, with("/api/v1/report/top", "by", "teams", "units", "percent"))
	for _, s := range []string{"start", "alloc", "eff", "idle"} {
		ps = append(ps, with("/api/v1/jobs", "sort", s, "limit", "10000"))
	}
	ps = append(ps, with("/api/v1/jobs", "state", "running"), with("/api/v1/jobs", "user", jobs[0].User), with("/api/v1/jobs", "team", jobs[0].Team))
	for _, j := range jobs {
		ps = append(ps, j.URL, j.URL+"/series")
	}
	return append(ps, "/api/v1/jobs/running", "/api/v1/nodes", "/api/v1/health", "/api/v1/notes", "/api/v1/notes?all=1")
}
