package web_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestServe runs the real `gpuacct serve` (ingest, /metrics and the
// dashboard on one listener) over generated records and checks the JSON
// API against the ground truth and against gpuacct report and gpuacct
// job for the same window, every bad input, the caching headers and,
// in a real headless browser, the pages.
func TestServe(t *testing.T) {
	now := time.Now()
	f := newFixture(t, now)
	f.serve(t)
	win := url.Values{"start": {f.genStart.Format("2006-01-02T15:04")}, "end": {f.genEnd.Add(time.Hour).Format("2006-01-02T15:04")}}
	t.Run("teams equal the ground truth", func(t *testing.T) { testTruth(t, f, win) })
	t.Run("API equals gpuacct report", func(t *testing.T) { testSameAsCLI(t, f, win) })
	t.Run("jobs", func(t *testing.T) { testJobs(t, f, win) })
	t.Run("bad input", func(t *testing.T) { testBadInput(t, f, win) })
	t.Run("headers", func(t *testing.T) { testHeaders(t, f) })
	t.Run("security headers", func(t *testing.T) { testSecurityHeaders(t, f, [2]string{}) })
	t.Run("writes refused", func(t *testing.T) { testReadOnly(t, f, [2]string{}) })
	t.Run("metrics still served", func(t *testing.T) {
		code, b := getJSON(t, f.url("/metrics"), nil)
		if code != http.StatusOK || !bytes.Contains(b, []byte("gpuacct_ingest_passes_total")) {
			t.Errorf("/metrics: %d %.200s", code, b)
		}
		if !bytes.Contains(b, []byte("gpusuite_build_info{")) {
			t.Errorf("/metrics lacks gpusuite_build_info")
		}
		if !bytes.Contains(b, []byte(`gpuacct_board_gpus{state="free"}`)) {
			t.Errorf("/metrics lacks the board's gauges")
		}
	})
	t.Run("live board served", func(t *testing.T) {
		var doc board.StatusDoc
		code, b := getJSON(t, f.url("/api/v1/board"), &doc)
		if code != http.StatusOK || len(doc.Nodes) != 1 || doc.Nodes[0].Name != f.running.node || len(doc.Nodes[0].GPUs) != 2 {
			t.Fatalf("/api/v1/board: %d %.500s", code, b)
		}
		// Where serve reaches a real Slurm (make test), it does not know
		// this simulated node: down.
		want := []board.State{board.Busy, board.Free}
		if doc.Slurm {
			want = []board.State{board.Down, board.Down}
		}
		if g := doc.Nodes[0].GPUs; g[0].State != want[0] || g[1].State != want[1] {
			t.Errorf("states %s, %s; want %s (Slurm read: %v)", g[0].State, g[1].State, want, doc.Slurm)
		}
		code, b = getJSON(t, f.url("/"), nil)
		if code != http.StatusOK || !bytes.Contains(b, []byte(`id="gpu-`+f.running.node+`-1"`)) {
			t.Errorf("board page: %d %.300s", code, b)
		}
	})
	t.Run("load stays bounded", func(t *testing.T) { testLoad(t, f) })
	t.Run("browser", func(t *testing.T) { testBrowser(t, f, win) })
}

type reportJSON struct {
	Report string           `json:"report"`
	Start  string           `json:"start"`
	End    string           `json:"end"`
	Rows   []map[string]any `json:"rows"`
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func testTruth(t *testing.T, f *fixture, win url.Values) {
	var r reportJSON
	code, body := getJSON(t, f.url("/api/v1/report/teams?"+win.Encode()), &r)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	got := map[string]float64{}
	var used, idle, energy, jobs float64
	for _, row := range r.Rows {
		got[row["team"].(string)] = row["alloc_gpu_hours"].(float64)
		used += row["used_gpu_hours"].(float64)
		idle += row["idle_gpu_hours"].(float64)
		energy += row["energy_kwh"].(float64)
		jobs += row["jobs"].(float64)
	}
	want := map[string]float64{}
	for acct, s := range f.truth.PerAccount {
		want[acct] = math.Round(float64(s)/3600*1e6) / 1e6
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("allocated GPU-hours per team (-truth +API):\n%s", d)
	}
	tol := 1e-6 * float64(len(r.Rows)+1)
	if !near(used, f.truth.Used/3600, tol) || !near(idle, f.truth.Idle/3600, tol) {
		t.Errorf("used/idle GPU-hours: got %v/%v, truth %v/%v", used, idle, f.truth.Used/3600, f.truth.Idle/3600)
	}
	if int(jobs) != f.truth.Jobs {
		t.Errorf("jobs: got %v, truth %d", jobs, f.truth.Jobs)
	}
	if energy <= 0 {
		t.Errorf("energy: got %v kWh, want some", energy)
	}
}

func testSameAsCLI(t *testing.T, f *fixture, win url.Values) {
	now := time.Now()
	for _, tc := range []struct {
		kind  string
		extra map[string]string
	}{
		{"teams", nil},
		{"users", map[string]string{"period": "day"}},
		{"tree", nil},
		{"accounts", map[string]string{"units": "percent"}},
		{"partitions", map[string]string{"users": "alice,bob"}},
		{"nodes", map[string]string{"period": "week", "units": "minutes"}},
		{"models", nil},
		{"top", map[string]string{"by": "teams", "limit": "2"}},
		{"users", map[string]string{"teams": "physics"}},
		{"jobs", map[string]string{"sort": "eff", "limit": "15"}},
		{"teams", map[string]string{"start": "now-1days", "end": ""}},
	} {
		name := tc.kind
		for _, k := range sortedKeys(tc.extra) {
			name += " " + k + "=" + tc.extra[k]
		}
		t.Run(name, func(t *testing.T) {
			v := url.Values{}
			for k, x := range win {
				v[k] = x
			}
			args := []string{"report", tc.kind, "--format", "json"}
			for k, x := range tc.extra {
				if x == "" {
					v.Del(k)
				} else {
					v.Set(k, x)
				}
			}
			for _, k := range sortedKeys(v) {
				args = append(args, "--"+k, v.Get(k))
			}
			code, api := getJSON(t, f.url("/api/v1/report/"+tc.kind+"?"+v.Encode()), nil)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, api)
			}
			cli := f.cliOut(t, now, args...)
			if d := cmp.Diff(string(cli), string(api)); d != "" {
				t.Errorf("gpuacct %s vs API (-cli +api):\n%s", strings.Join(args, " "), d)
			}
			var r reportJSON
			if err := json.Unmarshal(api, &r); err != nil || len(r.Rows) == 0 {
				t.Errorf("no rows (%v): %.300s", err, api)
			}
		})
	}
	// One job, as gpuacct job --json writes it.
	j := busyJob(t, f, "alice")
	id := strconv.FormatUint(j.ID, 10)
	code, api := getJSON(t, f.url("/api/v1/jobs/"+cluster+"/"+id), nil)
	if code != http.StatusOK {
		t.Fatalf("job: status %d: %s", code, api)
	}
	if d := cmp.Diff(string(f.cliOut(t, now, "job", id, "--json")), string(api)); d != "" {
		t.Errorf("gpuacct job %s --json vs API (-cli +api):\n%s", id, d)
	}
	var det struct {
		AllocGPUH float64 `json:"alloc_gpu_hours"`
		GPUs      []struct {
			UtilMax float64 `json:"util_max_pct"`
		} `json:"gpus_detail"`
	}
	if err := json.Unmarshal(api, &det); err != nil {
		t.Fatal(err)
	}
	if want := float64(int64(len(j.GPUs))*(j.End-j.Start)) / 3600; !near(det.AllocGPUH, want, 1e-6) {
		t.Errorf("job %s: allocated %v GPU-h, truth %v", id, det.AllocGPUH, want)
	}
	if len(det.GPUs) != len(j.GPUs) {
		t.Fatalf("job %s: %d GPUs, truth %d", id, len(det.GPUs), len(j.GPUs))
	}
	for i, g := range det.GPUs {
		if g.UtilMax != float64(j.Util) {
			t.Errorf("job %s GPU %d: max utilization %v, truth %d", id, i, g.UtilMax, j.Util)
		}
	}
	var series struct {
		GPUs []struct {
			Points []struct {
				T    int64   `json:"t_ms"`
				Util float64 `json:"util"`
			} `json:"points"`
		} `json:"gpus"`
	}
	if code, b := getJSON(t, f.url("/api/v1/jobs/"+cluster+"/"+id+"/series"), &series); code != http.StatusOK || len(series.GPUs) != len(j.GPUs) {
		t.Fatalf("series: %d %.300s", code, b)
	}
	for _, g := range series.GPUs {
		if want := int((j.End - j.Start) / 60); len(g.Points) < want-1 || len(g.Points) > want+1 {
			t.Errorf("series: %d points, want about %d (one a minute)", len(g.Points), want)
		}
	}
}

// busyJob is the longest job of user that kept its GPUs busy.
func busyJob(t *testing.T, f *fixture, user string) gendata.Job {
	t.Helper()
	var best *gendata.Job
	for i, j := range f.truth.JobList {
		if j.User == user && j.Util >= 40 && j.HasEnd && (best == nil || j.End-j.Start > best.End-best.Start) {
			best = &f.truth.JobList[i]
		}
	}
	if best == nil {
		t.Fatalf("no busy job of %s in the generated data", user)
	}
	return *best
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type jobsJSON struct {
	Count     int  `json:"count"`
	Truncated bool `json:"truncated"`
	Jobs      []struct {
		Job       string  `json:"job"`
		JobID     uint64  `json:"job_id"`
		User      string  `json:"user"`
		Team      string  `json:"team"`
		State     string  `json:"state"`
		GPUs      int     `json:"gpus"`
		AllocGPUH float64 `json:"alloc_gpu_hours"`
		URL       string  `json:"url"`
		GPUList   []struct {
			Node  string `json:"node"`
			Index int    `json:"index"`
		} `json:"gpu_list"`
	} `json:"jobs"`
}

func testJobs(t *testing.T, f *fixture, win url.Values) {
	v := url.Values{"user": {"bob"}, "limit": {"10000"}, "start": win["start"], "end": win["end"]}
	var got jobsJSON
	if code, b := getJSON(t, f.url("/api/v1/jobs?"+v.Encode()), &got); code != http.StatusOK {
		t.Fatalf("status %d: %s", code, b)
	}
	want := map[uint64]float64{}
	for _, j := range f.truth.JobList {
		if j.User == "bob" {
			want[j.ID] = float64(int64(len(j.GPUs))*(j.End-j.Start)) / 3600
		}
	}
	gotAlloc := map[uint64]float64{}
	for _, j := range got.Jobs {
		gotAlloc[j.JobID] = j.AllocGPUH
	}
	if d := cmp.Diff(want, gotAlloc, cmp.Comparer(func(a, b float64) bool { return near(a, b, 1e-6) })); d != "" {
		t.Errorf("bob's jobs and their GPU-hours (-truth +API):\n%s", d)
	}
	if got.Count != len(want) || got.Truncated {
		t.Errorf("count %d truncated %v, want %d false", got.Count, got.Truncated, len(want))
	}

	// limit cuts and says so.
	v.Set("limit", "3")
	got = jobsJSON{}
	getJSON(t, f.url("/api/v1/jobs?"+v.Encode()), &got)
	if got.Count != 3 || !got.Truncated {
		t.Errorf("limit 3: count %d truncated %v", got.Count, got.Truncated)
	}

	// The running job, by state and in the running list with its GPUs.
	for _, path := range []string{"/api/v1/jobs?state=running", "/api/v1/jobs?state=running&team=live&user=zoe", "/api/v1/jobs/running"} {
		got = jobsJSON{}
		if code, b := getJSON(t, f.url(path), &got); code != http.StatusOK || got.Count != 1 {
			t.Fatalf("%s: %d %s", path, code, b)
		}
		j := got.Jobs[0]
		if j.JobID != f.running.id || j.State != "running" || j.GPUs != 2 || j.Team != "live" || j.URL != "/api/v1/jobs/c1/9000001" {
			t.Errorf("%s: %+v", path, j)
		}
		if max := 2 * time.Since(f.running.start).Hours(); j.AllocGPUH <= 0 || j.AllocGPUH > max {
			t.Errorf("%s: running job allocated %v GPU-h, want (0, %v]", path, j.AllocGPUH, max)
		}
		if path == "/api/v1/jobs/running" {
			want := fmt.Sprint([]any{f.running.node, 0, f.running.node, 1})
			var have []any
			for _, g := range j.GPUList {
				have = append(have, g.Node, g.Index)
			}
			if fmt.Sprint(have) != want {
				t.Errorf("running job's GPUs: %v, want %v", have, want)
			}
		}
	}
	// Completed jobs only.
	got = jobsJSON{}
	getJSON(t, f.url("/api/v1/jobs?state=completed&limit=10000&"+win.Encode()), &got)
	if got.Count != f.truth.Jobs {
		t.Errorf("completed jobs in the window: %d, truth %d", got.Count, f.truth.Jobs)
	}
}

func testBadInput(t *testing.T, f *fixture, win url.Values) {
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/api/v1/report/teams?start=2026-13-45", 400, "not a real date"},
		{"/api/v1/report/teams?start=yesterdayish", 400, "is not one of"},
		{"/api/v1/report/teams?start=2026-02-02&end=2026-02-01", 400, "is not after start"},
		{"/api/v1/report/teams?teams=nosuchteam", 400, `unknown team "nosuchteam"`},
		{"/api/v1/report/users?nodes=nosuchnode", 400, `unknown node "nosuchnode"`},
		{"/api/v1/report/teams?period=decade", 400, "period"},
		{"/api/v1/report/teams?units=parsecs", 400, "units"},
		{"/api/v1/report/teams?tz=Mars/Olympus", 400, "time zone"},
		{"/api/v1/report/top?by=nodes", 400, "by"},
		{"/api/v1/report/teams?limit=-4", 400, "limit"},
		{"/api/v1/report/teams?limit=0", 400, "limit"},
		{"/api/v1/report/users?start=0001-01-01&end=9999-12-31&period=day", 400, "outside the years 1970 to 2199"},
		{"/api/v1/report/users?start=now-1000000weeks", 400, "more than 230 years from now"},
		{"/api/v1/report/users?start=1980-01-01&end=2100-01-01&period=day", 400, "more than 1000 periods: shorten the window"},
		{"/api/v1/report/users?users=nosuchuser", 400, `users: no user "nosuchuser"`},
		{"/api/v1/report/teams?account=nosuchacct", 400, `accounts: no account "nosuchacct"`},
		{"/api/v1/report/teams?partition=nosuchpart", 400, `partitions: no partition "nosuchpart"`},
		{"/api/v1/report/models?model=nosuchmodel", 400, `models: no model "nosuchmodel"`},
		{"/api/v1/report/teams?cluster=c9", 400, `?clusters: no cluster "c9" in `},
		{"/api/v1/jobs?user=nosuchuser", 400, `users: no user "nosuchuser"`},
		{"/api/v1/report/galaxies", 404, "unknown report"},
		{"/api/v1/jobs?team=nosuchteam", 400, `unknown team "nosuchteam"`},
		{"/api/v1/jobs?state=Not%20A%20State", 400, "state"},
		{"/api/v1/jobs?sort=random", 400, "sort"},
		{"/api/v1/jobs?end=now-30days&start=now", 400, "is not after start"},
		{"/api/v1/jobs/c1/424242424", 404, "not found"},
		{"/api/v1/jobs/elsewhere/" + strconv.FormatUint(f.truth.JobList[0].ID, 10), 404, "not found"},
		{"/api/v1/jobs/c1/12ab", 400, "not a Slurm job id"},
		{"/api/v1/jobs/c1/424242424/series", 404, "not found"},
		{"/api/v1/nothing", 404, "no API route"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var e struct {
				Error string `json:"error"`
			}
			code, b := getJSON(t, f.url(tc.path), &e)
			if code != tc.code || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("got %d %s, want %d and an error with %q", code, b, tc.code, tc.msg)
			}
			if strings.Contains(e.Error, "--") {
				t.Errorf("error names a command-line option: %q", e.Error)
			}
		})
	}
	// Pages answer the same mistakes with an HTML page, escaped.
	for _, tc := range []struct {
		path, msg string
		code      int
	}{
		{"/?start=2026-99-01", "not a real date", 400},
		{"/team/" + url.PathEscape("<script>alert(1)</script>"), `unknown team &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;`, 404},
		{"/user/nobody-here", "unknown user", 404},
		{"/job/c1/424242424", "not found", 404},
		{"/no/such/page", "no page", 404},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, b := getJSON(t, f.url(tc.path), nil)
			if code != tc.code || !bytes.Contains(b, []byte(tc.msg)) || bytes.Contains(b, []byte("<script>alert")) {
				t.Errorf("got %d, want %d with %q:\n%.2000s", code, tc.code, tc.msg, b)
			}
		})
	}
}

func testHeaders(t *testing.T, f *fixture) {
	req, _ := http.NewRequest("GET", f.url("/api/v1/report/teams"), nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Cache-Control") != "private, max-age=5" {
		t.Fatalf("headers: %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || !json.Valid(b) {
		t.Fatalf("gzip body: %v %.200s", err, b)
	}
	// Static files: an ETag, and 304 when it matches.
	resp2, err := http.Get(f.url("/static/style.css"))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	etag := resp2.Header.Get("ETag")
	if resp2.StatusCode != 200 || etag == "" || !strings.HasPrefix(resp2.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("static: %d %v", resp2.StatusCode, resp2.Header)
	}
	req3, _ := http.NewRequest("GET", f.url("/static/style.css"), nil)
	req3.Header.Set("If-None-Match", etag)
	req3.Header.Set("Accept-Encoding", "gzip")
	resp3, err := http.DefaultTransport.RoundTrip(req3)
	if err != nil {
		t.Fatal(err)
	}
	resp3.Body.Close()
	if resp3.StatusCode != http.StatusNotModified || resp3.Header.Get("Content-Encoding") != "" {
		t.Errorf("If-None-Match: %d %v", resp3.StatusCode, resp3.Header)
	}
}

// TestSQLiteUnreadable: a missing database file and a file that is not
// one are 503 with the reason, for the API and the pages.
func TestSQLiteUnreadable(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, msg string
	}{
		{"missing", "", "does not exist"},
		{"garbage", strings.Repeat("not a database ", 500), "not a gpusuite accounting database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".db")
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			checkUnreadable(t, path, tc.msg)
		})
	}
}

// TestPostgresUnreadable: a PostgreSQL database with no ledger in it and
// a server that does not answer are 503 with the reason, and the URL's
// password is in no answer.
func TestPostgresUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name, url, msg string
	}{
		{"no ledger", ledgerdb.NewPostgresDB(t), "not a gpusuite accounting database"},
		{"server down", "postgres://gpusuite:s3cret@127.0.0.1:1/acct?connect_timeout=5", "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b := checkUnreadable(t, tc.url, tc.msg); bytes.Contains(b, []byte("s3cret")) {
				t.Errorf("the password is in the page: %.500s", b)
			}
		})
	}
}

// checkUnreadable checks that a handler on the ledger at db answers 503
// with msg on the API and the overview, and 400 to bad input; it returns
// the bodies.
func checkUnreadable(t *testing.T, db, msg string) []byte {
	t.Helper()
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	var all []byte
	for _, p := range []string{"/api/v1/health", "/api/v1/report/teams", "/api/v1/jobs/c1/1"} {
		var e struct {
			Error string `json:"error"`
		}
		code, b := getJSON(t, srv.URL+p, &e)
		if code != http.StatusServiceUnavailable || !strings.Contains(e.Error, msg) {
			t.Errorf("%s: %d %s, want 503 with %q", p, code, b, msg)
		}
		all = append(all, b...)
	}
	code, b := getJSON(t, srv.URL+"/accounting", nil)
	if code != http.StatusServiceUnavailable || !bytes.Contains(b, []byte(msg)) {
		t.Errorf("overview: %d %.500s", code, b)
	}
	// Bad input is still a 400, before the database is needed.
	if code, _ := getJSON(t, srv.URL+"/api/v1/report/teams?start=xyz", nil); code != http.StatusBadRequest {
		t.Errorf("bad date with no database: %d, want 400", code)
	}
	return append(all, b...)
}

func TestNewRefusesBadMapping(t *testing.T) {
	p := filepath.Join(t.TempDir(), "teams.toml")
	if err := os.WriteFile(p, []byte("[teams.a]\nusers = [\"x\"]\n[teams.b]\nusers = [\"x\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := web.New(web.Options{DB: "/nonexistent.db", Teams: p}); err == nil || !strings.Contains(err.Error(), "team mapping") {
		t.Errorf("a user in two teams: %v, want a team mapping error", err)
	}
}

// The configuration's stream bounds reach the handler: the per-client
// key's 0 is no bound (not the default), and the trusted proxies parsed.
func TestOptionsFromStreams(t *testing.T) {
	for _, tc := range []struct {
		name          string
		toml          string
		wantPerClient int
		wantProxies   []netip.Prefix
	}{
		{name: "defaults", wantPerClient: 8, wantProxies: []netip.Prefix{}},
		{name: "off", toml: "[web]\nmax_streams_per_client = 0", wantPerClient: -1, wantProxies: []netip.Prefix{}},
		{name: "behind a proxy", toml: "[web]\nmax_streams_per_client = 3\ntrusted_proxies = [\"10.0.0.5\", \"fd00::/64\"]",
			wantPerClient: 3, wantProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("fd00::/64")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if err := config.Parse([]byte(tc.toml), &cfg); err != nil {
				t.Fatal(err)
			}
			o, err := web.OptionsFrom(cfg, nil, nil, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if o.MaxStreamsPerClient != tc.wantPerClient {
				t.Errorf("MaxStreamsPerClient %d, want %d", o.MaxStreamsPerClient, tc.wantPerClient)
			}
			if diff := cmp.Diff(tc.wantProxies, o.TrustedProxies, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("TrustedProxies (-want +got):\n%s", diff)
			}
		})
	}
}
