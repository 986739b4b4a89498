package web_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/web"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// TestMyJobs: /me and /api/v1/me/jobs are `gpuacct jobs --user me` for
// the logged-in user (the reverse proxy's header here): alice's running
// and finished runs of the last 7 days, each linked to its page, and
// none of bob's; the header links to it for a logged-in user only.
// Without a user it is 401; a name no user can have, or a filter that
// would name another user, is 400 in one line.
func TestMyJobs(t *testing.T) {
	db, now := myJobsLedger(t)
	for _, private := range []bool{false, true} {
		get := serveWeb(t, web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, PrivateData: private,
			Admins: []string{"boss"}, UserHeader: "X-Remote-User"}, "", nil)
		name := map[bool]string{false: "open", true: "private"}[private]
		t.Run(name, func(t *testing.T) {
			code, page := get(t, "/me", "alice")
			if code != http.StatusOK {
				t.Fatalf("/me as alice: %d %.300s", code, page)
			}
			for _, want := range []string{`<a href="/me" class="on" aria-current="page">My jobs</a>`, "JOBID", `<a href="/job/c1/9">9 `,
				`<a href="/job/c1/7">7 `, "gpuacct jobs --user me"} {
				if !strings.Contains(page, want) {
					t.Errorf("/me as alice lacks %q", want)
				}
			}
			if strings.Contains(page, "bob") || strings.Contains(page, "/job/c1/8") || strings.Contains(page, "/job/c1/5") {
				t.Errorf("/me as alice shows bob's run or one older than 7 days")
			}
			code, body := get(t, "/api/v1/me/jobs", "alice")
			var doc struct {
				Rows []struct{ Job, User string } `json:"rows"`
			}
			if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
				t.Fatalf("/api/v1/me/jobs: %d %v %.300s", code, err, body)
			}
			var jobs []string
			for _, r := range doc.Rows {
				if r.User != "alice" {
					t.Errorf("/api/v1/me/jobs as alice lists %s's run %s", r.User, r.Job)
				}
				jobs = append(jobs, r.Job)
			}
			slices.Sort(jobs)
			if diff := cmp.Diff([]string{"7", "9"}, jobs); diff != "" {
				t.Errorf("alice's runs (-want +got):\n%s", diff)
			}
			if _, page := get(t, "/me?start=now-2days", "alice"); !strings.Contains(page, "<code>gpuacct jobs --user me --since now-2days</code>") {
				t.Errorf("/me?start=now-2days does not give its window to the terminal line")
			}
			if code, page := get(t, "/me", "carol"); code != http.StatusOK || strings.Contains(page, "/job/c1/") {
				t.Errorf("/me as carol, who has no runs: %d, or a run listed", code)
			}
			if _, page := get(t, "/accounting", "alice"); !strings.Contains(page, `<a href="/me">My jobs</a>`) {
				t.Errorf("the header of a logged-in user's page does not link to /me")
			}
			for _, tc := range []struct {
				path, user string
				code       int
				// privateCode, when not 0, is the private-data gate's
				// answer, which comes first.
				privateCode int
			}{
				{"/me", "", http.StatusUnauthorized, 0},
				{"/api/v1/me/jobs", "", http.StatusUnauthorized, 0},
				{"/me", "al ice", http.StatusBadRequest, 0},
				{"/me", strings.Repeat("x", 200), http.StatusBadRequest, 0},
				{"/api/v1/me/jobs", "a,bob", http.StatusBadRequest, 0},
				{"/me?user=bob", "alice", http.StatusBadRequest, http.StatusForbidden},
				{"/api/v1/me/jobs?account=nlp", "alice", http.StatusBadRequest, 0},
				{"/me/..%2fuser%2fbob", "alice", http.StatusNotFound, 0},
				{"/me?start=garbage", "alice", http.StatusBadRequest, 0},
			} {
				if private && tc.user == "" {
					continue // the private-data gate answers first, as for every page
				}
				want := tc.code
				if private && tc.privateCode != 0 {
					want = tc.privateCode
				}
				code, body := get(t, tc.path, tc.user)
				if code != want {
					t.Errorf("%s as %q: %d, want %d: %.200s", tc.path, tc.user, code, want, body)
				}
			}
		})
	}
	// A site where no one logs in sees no link.
	get := serveWeb(t, web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }}, "", nil)
	if _, page := get(t, "/accounting", ""); strings.Contains(page, "/me") {
		t.Error("a page of a site without logins links to /me")
	}
}

// myJobsLedger is a ledger of alice's runs (7 and 9, running; 5, over
// 30 days ago) and bob's 8, and the time it is read at.
func myJobsLedger(t *testing.T) (string, time.Time) {
	t0 := reportfixture.T0
	now := time.Unix(t0+3*86400, 0)
	return reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 9, User: "alice", Acct: "vision", Part: "gpu", Node: "n2", GPUs: 2, Start: now.Unix() - 600},
		{ID: 5, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0 - 30*86400, End: t0 - 29*86400},
	}, now), now
}

// serveWeb serves o on loopback as serve does, behind the web config
// file webConfig when set (which checks the passwords). get asks path as
// user: with basic auth, user's password in logins, when logins is set,
// else in the X-Remote-User header; "" asks with no user.
func serveWeb(t *testing.T, o web.Options, webConfig string, logins map[string]string) (get func(t *testing.T, path, user string) (int, string)) {
	t.Helper()
	h, err := web.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := web.NewServer(web.Secure(web.ReadOnly(h)), time.Minute)
	webconfig.Start(ln, srv, webConfig, slog.New(slog.DiscardHandler), "web")
	t.Cleanup(func() { srv.Close(); h.Close() })
	base := "http://" + ln.Addr().String()
	return func(t *testing.T, path, user string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case user == "":
		case logins != nil:
			req.SetBasicAuth(user, logins[user])
		default:
			req.Header.Set("X-Remote-User", user)
		}
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		return resp.StatusCode, string(body)
	}
}
