package web_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
)

// testSecurityHeaders: every answer of serve, pages, API, static files,
// /metrics and a 404, carries the security headers.
func testSecurityHeaders(t *testing.T, f *fixture, login [2]string) {
	for _, path := range []string{"/", "/accounting", "/api/v1/health", "/static/app.js", "/metrics", "/no/such/page", "/api/v1/none"} {
		t.Run(path, func(t *testing.T) {
			resp := f.do(t, http.MethodGet, path, login)
			resp.Body.Close()
			h := resp.Header
			for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			for _, d := range strings.Split(csp, ";") {
				if d = strings.TrimSpace(d); strings.HasPrefix(d, "script-src") && d != "script-src 'self'" {
					t.Errorf("Content-Security-Policy's %q lets more than /static/'s scripts run", d)
				}
			}
		})
	}
}

// testReadOnly: every route answers a method that would write with 405
// and Allow: GET, HEAD.
func testReadOnly(t *testing.T, f *fixture, login [2]string) {
	paths := []string{"/", "/accounting", "/team/x", "/user/x", "/job/c1/1", "/static/app.js", "/metrics",
		"/api/v1/health", "/api/v1/report/users", "/api/v1/jobs", "/api/v1/jobs/running", "/api/v1/jobs/c1/1",
		"/api/v1/jobs/c1/1/series", "/api/v1/nodes", "/api/v1/board", "/api/v1/free", "/api/v1/notes", "/api/v1/board/events", "/api/v1/none"}
	for _, path := range paths {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			resp := f.do(t, m, path, login)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q; want 405 with Allow: GET, HEAD", m, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
	}
}

func (f *fixture) do(t *testing.T, method, path string, login [2]string) *http.Response {
	t.Helper()
	c := f.client
	if c == nil {
		c = &http.Client{Timeout: 60 * time.Second}
	}
	req, err := http.NewRequest(method, f.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if login[0] != "" {
		req.SetBasicAuth(login[0], login[1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// TestPrivateData runs the real gpuacct serve behind TLS and basic auth
// (a web config file with a throwaway certificate) with
// web.private_data on: root, an admin, sees every name; bob sees his
// own and every other as (hidden), with the same totals; without a
// login nothing is answered.
func TestPrivateData(t *testing.T) {
	now := time.Now()
	f := newFixture(t, now)
	wc := tlscert.Write(t, true, map[string]string{"root": "r00t", "bob": "b0b", "zoe": "z0e", "eri": "3r1"}, "")
	cfg, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("[web]\n"), fmt.Appendf(nil, "[web]\nconfig_file = %q\nprivate_data = true\nadmins = [\"root\"]\n", wc.Path), 1)
	if err := os.WriteFile(f.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	root, bob, zoe := [2]string{"root", "r00t"}, [2]string{"bob", "b0b"}, [2]string{"zoe", "z0e"}
	f.scheme, f.client, f.login = "https", wc.Client(), root
	f.serve(t)
	win := url.Values{"start": {f.genStart.Format("2006-01-02T15:04")}, "end": {f.genEnd.Add(time.Hour).Format("2006-01-02T15:04")}}

	t.Run("no login", func(t *testing.T) {
		for _, path := range []string{"/", "/accounting", "/api/v1/jobs/running", "/metrics"} {
			if code, _ := f.get(t, path, [2]string{}, nil); code != http.StatusUnauthorized {
				t.Errorf("%s without login: %d, want 401", path, code)
			}
			if code, _ := f.get(t, path, [2]string{"bob", "wrong"}, nil); code != http.StatusUnauthorized {
				t.Errorf("%s with a wrong password: %d, want 401", path, code)
			}
		}
	})
	t.Run("headers", func(t *testing.T) { testSecurityHeaders(t, f, bob) })
	t.Run("writes refused", func(t *testing.T) { testReadOnly(t, f, bob) })

	users := func(login [2]string) (names map[string]bool, total float64) {
		t.Helper()
		var doc struct {
			Rows []map[string]any `json:"rows"`
		}
		code, b := f.get(t, "/api/v1/report/users?"+win.Encode(), login, &doc)
		if code != http.StatusOK {
			t.Fatalf("report users as %s: %d %.300s", login[0], code, b)
		}
		names = map[string]bool{}
		for _, r := range doc.Rows {
			names[fmt.Sprint(r["user"])] = true
			for k, v := range r {
				if strings.HasPrefix(k, "alloc_gpu") {
					x, _ := v.(float64)
					total += x
				}
			}
		}
		return names, total
	}
	t.Run("report", func(t *testing.T) {
		all, allTotal := users(root)
		if len(all) < 3 || all["(hidden)"] || !all["bob"] || !all["alice"] {
			t.Fatalf("root sees %v, want every user by name", all)
		}
		seen, total := users(bob)
		if !seen["bob"] || !seen["(hidden)"] || len(seen) != 2 {
			t.Errorf("bob sees %v, want bob and (hidden) only", seen)
		}
		if total != allTotal || total == 0 {
			t.Errorf("bob's total %v, root's %v: the totals must agree", total, allTotal)
		}
	})

	running := func(login [2]string) string {
		t.Helper()
		var doc struct {
			Jobs []struct {
				User string `json:"user"`
			} `json:"jobs"`
		}
		code, b := f.get(t, "/api/v1/jobs/running", login, &doc)
		if code != http.StatusOK || len(doc.Jobs) != 1 {
			t.Fatalf("running as %s: %d %.300s", login[0], code, b)
		}
		return doc.Jobs[0].User
	}
	boardUser := func(login [2]string) string {
		t.Helper()
		var doc board.StatusDoc
		code, b := f.get(t, "/api/v1/board", login, &doc)
		if code != http.StatusOK || len(doc.Nodes) != 1 || len(doc.Nodes[0].GPUs) == 0 || len(doc.Nodes[0].GPUs[0].Jobs) != 1 {
			t.Fatalf("board as %s: %d %.300s", login[0], code, b)
		}
		return doc.Nodes[0].GPUs[0].Jobs[0].User
	}
	jobPath := fmt.Sprintf("/job/%s/%d", cluster, f.running.id)
	apiJobPath := fmt.Sprintf("/api/v1/jobs/%s/%d", cluster, f.running.id)
	for _, tc := range []struct {
		login [2]string
		want  string
		// board is the job's user on the board: the agent's snapshot
		// names it u<job>, which is neither zoe nor bob.
		board string
	}{{root, "zoe", "u9000001"}, {zoe, "zoe", "(hidden)"}, {bob, "(hidden)", "(hidden)"}} {
		t.Run("running job as "+tc.login[0], func(t *testing.T) {
			if got := running(tc.login); got != tc.want {
				t.Errorf("/api/v1/jobs/running: user %q, want %q", got, tc.want)
			}
			if got := boardUser(tc.login); got != tc.board {
				t.Errorf("/api/v1/board: user %q, want %q", got, tc.board)
			}
			var job struct {
				User string `json:"user"`
				Team string `json:"team"`
			}
			if code, b := f.get(t, apiJobPath, tc.login, &job); code != http.StatusOK || job.User != tc.want || job.Team != "live" {
				t.Errorf("%s: %d user %q team %q, want user %q team live; %.200s", apiJobPath, code, job.User, job.Team, tc.want, b)
			}
			code, page := f.get(t, jobPath, tc.login, nil)
			if code != http.StatusOK || !bytes.Contains(page, []byte(tc.want)) {
				t.Errorf("%s: %d, page without %q", jobPath, code, tc.want)
			}
			if tc.want == "(hidden)" {
				for _, path := range []string{jobPath, "/", "/accounting?" + win.Encode()} {
					if _, page := f.get(t, path, tc.login, nil); bytes.Contains(page, []byte("zoe")) || bytes.Contains(page, []byte("u9000001")) {
						t.Errorf("%s shows zoe or u9000001 to %s", path, tc.login[0])
					}
				}
			}
		})
	}
	t.Run("another user's page and filter", func(t *testing.T) {
		for _, path := range []string{"/user/alice", "/api/v1/jobs?user=alice", "/api/v1/report/users?users=bob,alice"} {
			if code, _ := f.get(t, path, bob, nil); code != http.StatusForbidden {
				t.Errorf("bob asks %s: %d, want 403", path, code)
			}
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			if code, _ := f.get(t, path+sep+win.Encode(), root, nil); code != http.StatusOK && !(strings.HasPrefix(path, "/user/") && code == http.StatusNotFound) {
				t.Errorf("root asks %s: %d, want 200", path, code)
			}
		}
		if code, _ := f.get(t, "/user/bob?"+win.Encode(), bob, nil); code != http.StatusOK {
			t.Errorf("bob's own page: %d, want 200", code)
		}
	})
	t.Run("refusals name no other user and no path", func(t *testing.T) {
		testErrorBodies(t, f, [2]string{"eri", "3r1"}, []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "zoe", "u9000001"}, win)
	})
	t.Run("metrics carry no user label", func(t *testing.T) {
		code, b := f.get(t, "/metrics", bob, nil)
		if code != http.StatusOK || !bytes.Contains(b, []byte("gpuacct_ingest_passes_total")) {
			t.Fatalf("/metrics: %d %.200s", code, b)
		}
		for _, leak := range []string{`user="`, `account="`, "zoe"} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("/metrics holds %q", leak)
			}
		}
	})
}
