package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/web"
)

// budgetNow is the budget tests' clock: the board tests' own, so that
// one server shows the live board and the budgets.
var budgetNow = boardNow

// budgetLedger holds vision's (alice's) 8 GPU-hours a day from November
// 16 to 25, nlp's (bob's) 10 a day from the 20th and ops' 160 on the
// 18th: at budgetNow,
// vision has used 80 of its month's 100 GPU-hours and, at the last 7
// days' 56 GPU-hours, runs out on November 28.
func budgetLedger(t *testing.T) string {
	t.Helper()
	var jobs []reportfixture.Job
	for d := 16; d <= 25; d++ {
		day := time.Date(2026, 11, d, 8, 0, 0, 0, time.UTC).Unix()
		jobs = append(jobs, reportfixture.Job{ID: uint64(100 + d), User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 2, Start: day, End: day + 4*3600})
		if d >= 20 {
			jobs = append(jobs, reportfixture.Job{ID: uint64(200 + d), User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: day, End: day + 10*3600})
		}
	}
	// ops, without a budget, is the busiest: first in the teams table
	day := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC).Unix()
	jobs = append(jobs, reportfixture.Job{ID: 300, User: "carol", Acct: "ops", Part: "gpu", Node: "n3", GPUs: 8, Start: day, End: day + 20*3600})
	return reportfixture.BuildLedger(t, jobs, budgetNow)
}

func budgets(t *testing.T) []budget.Budget {
	t.Helper()
	bs, err := budget.Parse([]budget.Entry{
		{Account: "vision", Period: "month", Amount: 100},
		{Account: "nlp", Period: "quarter", Amount: 1000},
		{Account: "nlp", User: "bob", Period: "range", From: "2026-11-01", To: "2026-11-30", Amount: 50},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// budgetOptions serve the budget ledger with the proxy's X-Remote-User
// naming the user; private turns web.private_data on, boss its admin
// and lena vision's lead.
func budgetOptions(t *testing.T, private bool) web.Options {
	return web.Options{DB: budgetLedger(t), Now: func() time.Time { return budgetNow }, Budgets: budgets(t),
		Leads: map[string][]string{"vision": {"lena"}}, UserHeader: "X-Remote-User", PrivateData: private, Admins: []string{"boss"}}
}

func getAs(t *testing.T, url, user string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-Remote-User", user)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s as %q: %v", url, user, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestBudgetBytes: every byte of a team's budget page and of its JSON
// on a fixed ledger and clock (testdata/bytes/budget-*, -update): the
// burn line against the ideal line, used, left, the share elapsed, the
// pace and the run-out date.
func TestBudgetBytes(t *testing.T) {
	o := budgetOptions(t, false)
	srv := newBoardServer(t, o)
	for _, tt := range []struct{ name, path string }{
		{"budget-vision.html", "/team/vision/budget"},
		{"budget-vision.json", "/api/v1/budget/vision"},
		{"budget-nlp.json", "/api/v1/budget/nlp"},
		{"budget-nlp.html", "/team/nlp/budget"},
		{"budget-none.html", "/team/ops/budget"},
		// the team's page links to its budget page
		{"budget-team.html", "/team/vision?start=2026-11-01&end=2026-11-26"},
		// the teams table's budget column
		{"budget-overview.html", "/accounting?start=2026-11-01&end=2026-11-26"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, b := getAs(t, srv.URL+tt.path, "")
			b = bytes.ReplaceAll(b, []byte(o.DB), []byte("LEDGER"))
			golden(t, filepath.Join("bytes", tt.name), append([]byte(fmt.Sprintf("HTTP %d\n", code)), b...))
		})
	}
}

var budgetCellRE = regexp.MustCompile(`<td class="budget"><a href="([^"]*)">`)

var budgetLineRE = regexp.MustCompile(`<a class="fresh(?: bad)?" id="budget-line" href="([^"]*)">([^<]*)</a>`)

// TestBudgetPrivate: under web.private_data a team's budget is shown to
// its members (alice charged vision), its lead (lena, who ran nothing)
// and admins, and refused to everyone else before any read; the board's
// header carries the logged-in user's teams' budgets only.
func TestBudgetPrivate(t *testing.T) {
	lb := newLiveBoard(t, nil)
	o := budgetOptions(t, true)
	o.Board = lb.src
	srv := newBoardServer(t, o)
	for _, tt := range []struct {
		user, team string
		want       int
	}{
		{"alice", "vision", http.StatusOK},
		{"lena", "vision", http.StatusOK},
		{"boss", "vision", http.StatusOK},
		{"boss", "nlp", http.StatusOK},
		{"bob", "nlp", http.StatusOK},
		{"alice", "nlp", http.StatusForbidden},
		{"lena", "nlp", http.StatusForbidden},
		{"bob", "vision", http.StatusForbidden},
		{"", "vision", http.StatusUnauthorized},
	} {
		for _, path := range []string{"/team/" + tt.team + "/budget", "/api/v1/budget/" + tt.team} {
			t.Run(tt.user+path, func(t *testing.T) {
				code, b := getAs(t, srv.URL+path, tt.user)
				if code != tt.want {
					t.Errorf("GET %s as %q: %d, want %d\n%.400s", path, tt.user, code, tt.want, b)
				}
				if code != http.StatusOK && bytes.Contains(b, []byte("GPU-h")) {
					t.Errorf("GET %s as %q refused, but tells figures:\n%.600s", path, tt.user, b)
				}
			})
		}
	}
	// A team's page, open to all, names its budget to those who may
	// see it only.
	for _, tt := range []struct {
		user, team, line string
	}{
		{"alice", "vision", "vision: 80 % of 100 GPU-h used, runs out 2026-11-28"},
		{"alice", "nlp", ""},
		{"boss", "nlp", "nlp: 6 % of 1,000 GPU-h used"},
	} {
		t.Run("team page "+tt.team+" as "+tt.user, func(t *testing.T) {
			code, b := getAs(t, srv.URL+"/team/"+tt.team+"?start=2026-11-01&end=2026-11-26", tt.user)
			if code != http.StatusOK {
				t.Fatalf("team page as %s: %d", tt.user, code)
			}
			var line string
			if m := budgetLineRE.FindSubmatch(b); m != nil {
				line = string(m[2])
			}
			if line != tt.line {
				t.Errorf("%s's page as %s: budget %q, want %q", tt.team, tt.user, line, tt.line)
			}
		})
	}
	// The overview's budget column: one's own teams' only.
	for _, tt := range []struct {
		user string
		want []string
	}{
		{"alice", []string{"/team/vision/budget"}},
		{"bob", []string{"/team/nlp/budget"}},
		{"boss", []string{"/team/nlp/budget", "/team/vision/budget"}},
	} {
		t.Run("overview as "+tt.user, func(t *testing.T) {
			code, b := getAs(t, srv.URL+"/accounting?start=2026-11-01&end=2026-11-26", tt.user)
			if code != http.StatusOK {
				t.Fatalf("overview as %s: %d", tt.user, code)
			}
			var got []string
			for _, m := range budgetCellRE.FindAllSubmatch(b, -1) {
				got = append(got, string(m[1]))
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("budget cells as %s (-want +got):\n%s", tt.user, diff)
			}
		})
	}
	for _, tt := range []struct{ user, line, url string }{
		{"lena", "vision: 80 % of 100 GPU-h used, runs out 2026-11-28", "/team/vision/budget"},
		{"alice", "vision: 80 % of 100 GPU-h used, runs out 2026-11-28", "/team/vision/budget"},
		{"bob", "nlp: 6 % of 1,000 GPU-h used · nlp/bob: 120 % of 50 GPU-h used, ran out 2026-11-25", "/team/nlp/budget"},
		{"boss", "", ""},
	} {
		t.Run("board as "+tt.user, func(t *testing.T) {
			code, b := getAs(t, srv.URL+"/", tt.user)
			if code != http.StatusOK {
				t.Fatalf("board as %s: %d", tt.user, code)
			}
			var line, url string
			if m := budgetLineRE.FindSubmatch(b); m != nil {
				url, line = string(m[1]), string(m[2])
			}
			if line != tt.line || url != tt.url {
				t.Errorf("board's header as %s: %q linking to %q, want %q linking to %q", tt.user, line, url, tt.line, tt.url)
			}
		})
	}
}

// TestBudgetSlurm: where Slurm has a GrpTRESMins on the association
// (scontrol show assoc_mgr as Slurm 22.05 writes it,
// testdata/budget-assoc_mgr.txt), the budget page and its JSON show the
// limit and Slurm's usage beside the budget, in its unit, and say which
// one stops jobs; scontrol is asked once a minute, not once a page.
func TestBudgetSlurm(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "budget-assoc_mgr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	o := budgetOptions(t, false)
	o.SlurmLimits = func(context.Context) ([]budget.SlurmLimit, error) {
		asked.Add(1)
		return budget.ParseAssocMgr(out), nil
	}
	srv := newBoardServer(t, o)
	for _, tt := range []struct{ team, line string }{
		{"vision", "Slurm's GrpTRESMins on vision: 80.0 of 200 GPU-h used by Slurm's count; this budget runs out first, but only warns: jobs stop at Slurm's limit."},
		{"nlp", "Slurm's GrpTRESMins on nlp: 60.0 of 500 GPU-h used by Slurm's count; jobs stop at Slurm's limit, before this budget runs out."},
	} {
		_, page := getAs(t, srv.URL+"/team/"+tt.team+"/budget", "")
		var got string
		if m := regexp.MustCompile(`<p id="budget-slurm-1">([^<]*)</p>`).FindSubmatch(page); m != nil {
			got = html.UnescapeString(string(m[1]))
		}
		if got != tt.line {
			t.Errorf("%s's budget page: Slurm's line %q, want %q", tt.team, got, tt.line)
		}
	}
	var doc struct {
		Budgets []struct {
			User  string
			Slurm *struct{ Limit, Used float64 }
		}
	}
	code, b := getAs(t, srv.URL+"/api/v1/budget/nlp", "")
	if err := json.Unmarshal(b, &doc); code != http.StatusOK || err != nil || len(doc.Budgets) != 2 {
		t.Fatalf("GET /api/v1/budget/nlp: %d, %v: %s", code, err, b)
	}
	if s := doc.Budgets[0].Slurm; s == nil || s.Limit != 500 || s.Used != 60 {
		t.Errorf("nlp's Slurm limit in the JSON: %+v, want 500 GPU-h, 60 used", s)
	}
	if doc.Budgets[1].Slurm != nil {
		t.Errorf("bob's budget has no association limit, but the JSON shows %+v", doc.Budgets[1].Slurm)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("scontrol asked %d times for three requests within a minute, want once", n)
	}
}
