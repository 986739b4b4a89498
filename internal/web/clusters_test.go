package web_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// clusterNow is the handlers' clock in the cluster tests: a day after
// the fixture's jobs.
var clusterNow = time.Unix(reportfixture.T0+86400, 0)

const clusterWindow = "start=2026-01-01&end=2026-01-02"

// twoClusterLedger is a ledger clusters gpu1 and gpu2 share: job 7,
// user alice and node n1 on both, and a job running on each (gpu2's
// newer).
func twoClusterLedger(t *testing.T) string {
	t.Helper()
	t0 := reportfixture.T0
	return reportfixture.BuildLedger(t, []reportfixture.Job{
		{Cluster: "gpu1", ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 2, Start: t0, End: t0 + 3600},
		{Cluster: "gpu1", ID: 9, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0 + 600, End: t0 + 4200},
		{Cluster: "gpu2", ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 7200},
		{Cluster: "gpu2", ID: 8, User: "carol", Acct: "nlp", Part: "big", Node: "n3", GPUs: 4, Start: t0 + 3600, End: t0 + 5400},
		{Cluster: "gpu1", ID: 11, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0 + 1800},
		{Cluster: "gpu2", ID: 10, User: "dave", Acct: "nlp", Part: "big", Node: "n3", GPUs: 2, Start: t0 + 3600},
	}, clusterNow)
}

func oneClusterLedger(t *testing.T) string {
	t.Helper()
	t0 := reportfixture.T0
	return reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
	}, clusterNow)
}

// clusterServer serves the ledger at db with local cluster local.
func clusterServer(t *testing.T, db, local string) *httptest.Server {
	t.Helper()
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Cluster: local, Now: func() time.Time { return clusterNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return srv
}

var (
	pickerRE = regexp.MustCompile(`(?s)<form class="clusters".*?</form>`)
	h1RE     = regexp.MustCompile(`(?s)<h1>.*?</h1>`)
	titleRE  = regexp.MustCompile(`<title>.*?</title>`)
	cliRE    = regexp.MustCompile(`<code>gpuacct .*?</code>`)
)

// TestClusterPicker: with two clusters in the ledger the accounting
// pages carry a cluster picker (a GET form keeping the page's other
// parameters), their heading names the clusters read and their links
// keep the choice; with one cluster there is none. The picker, heading,
// title and terminal line are golden (testdata/clusters/, -update).
func TestClusterPicker(t *testing.T) {
	two, one := twoClusterLedger(t), oneClusterLedger(t)
	noLocal, local1 := clusterServer(t, two, ""), clusterServer(t, two, "gpu1")
	single := clusterServer(t, one, "elsewhere")
	tests := []struct {
		name, golden string
		srv          *httptest.Server
		path         string
		code         int
		links        string // a link the page must hold ("" none)
	}{
		{"no local: all", "picker-all.html", noLocal, "/accounting?" + clusterWindow, 200, `href="/team/vision?end=2026-01-02&amp;start=2026-01-01"`},
		{"chosen", "picker-gpu2.html", noLocal, "/accounting?clusters=gpu2&" + clusterWindow, 200, `href="/team/vision?clusters=gpu2&amp;end=2026-01-02&amp;start=2026-01-01"`},
		{"local", "picker-local.html", local1, "/accounting?" + clusterWindow, 200, ""},
		{"local overridden", "picker-local-all.html", local1, "/accounting?clusters=all&" + clusterWindow, 200, ""},
		{"two named", "picker-both.html", local1, "/accounting?clusters=gpu2,gpu1&" + clusterWindow, 200, ""},
		{"team page", "picker-team.html", noLocal, "/team/nlp?clusters=gpu2&period=day&" + clusterWindow, 200, `name="clusters" value="gpu2"`},
		{"user page", "picker-user.html", noLocal, "/user/alice?cluster=gpu1&" + clusterWindow, 200, ""},
		{"one cluster", "picker-one.html", single, "/accounting?" + clusterWindow, 200, ""},
		{"job page", "picker-job.html", noLocal, "/job/gpu2/7", 200, `<a href="/accounting?clusters=gpu2">Accounting</a>`},
		{"job page, one cluster", "picker-job-one.html", single, "/job/c1/7", 200, `<a href="/accounting">Accounting</a>`},
		{"unknown", "picker-unknown.html", noLocal, "/accounting?clusters=gpu3", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := getJSON(t, tt.srv.URL+tt.path, nil)
			if code != tt.code {
				t.Fatalf("GET %s: %d, want %d: %.800s", tt.path, code, tt.code, b)
			}
			page := string(b)
			got := strings.Join([]string{titleRE.FindString(page), h1RE.FindString(page), pickerRE.FindString(page), cliRE.FindString(page)}, "\n") + "\n"
			if tt.code != 200 {
				got += regexp.MustCompile(`(?s)<main>.*?</main>`).FindString(page) + "\n"
			}
			// The ledger is named, never located (TestPrivateData).
			if tt.links != "" && !strings.Contains(page, tt.links) {
				t.Errorf("the page lacks %s", tt.links)
			}
			golden(t, filepath.Join("clusters", tt.golden), []byte(got))
		})
	}
}

// TestClusterAPI: the JSON API takes ?clusters= (names or all) as the
// pages do and says the clusters it read; several get a cluster column;
// a one-cluster ledger's answers are as they were (no "clusters").
func TestClusterAPI(t *testing.T) {
	two := twoClusterLedger(t)
	noLocal, local2 := clusterServer(t, two, ""), clusterServer(t, two, "gpu2")
	single := clusterServer(t, oneClusterLedger(t), "")
	tests := []struct {
		name string
		srv  *httptest.Server
		path string
		code int
	}{
		{"report-all", noLocal, "/api/v1/report/users?" + clusterWindow, 200},
		{"report-local", local2, "/api/v1/report/users?" + clusterWindow, 200},
		{"report-chosen", local2, "/api/v1/report/teams?clusters=gpu1&" + clusterWindow, 200},
		{"report-all-param", local2, "/api/v1/report/tree?clusters=all&" + clusterWindow, 200},
		{"jobs-chosen", noLocal, "/api/v1/jobs?clusters=gpu2&" + clusterWindow, 200},
		{"nodes-chosen", noLocal, "/api/v1/nodes?clusters=gpu1", 200},
		{"running-local", local2, "/api/v1/jobs/running", 200},
		{"running-all", noLocal, "/api/v1/jobs/running", 200},
		// gpu2's running job is newer: the cluster is chosen before the limit.
		{"running-limit", noLocal, "/api/v1/jobs/running?clusters=gpu1&limit=1", 200},
		{"unknown", noLocal, "/api/v1/report/users?clusters=gpu1,gpu3", 400},
		{"names-and-all", noLocal, "/api/v1/jobs?clusters=gpu1,all", 400},
		{"names-none", noLocal, "/api/v1/report/users?clusters=,,,&" + clusterWindow, 400},
		{"names-empty", noLocal, "/api/v1/jobs/running?clusters=", 400},
		{"names-too-many", noLocal, "/api/v1/nodes?clusters=" + strings.Repeat("gpu1,", 65), 400},
		{"names-10k", noLocal, "/api/v1/nodes?clusters=" + manyNames(10000), 400},
		{"one-cluster", single, "/api/v1/report/users?" + clusterWindow, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := getJSON(t, tt.srv.URL+tt.path, nil)
			if code != tt.code {
				t.Fatalf("GET %s: %d, want %d: %s", tt.path, code, tt.code, b)
			}
			golden(t, filepath.Join("clusters", tt.name+".json"), b)
		})
	}
}

// TestClusterPickerBrowser: in chromium the picker is reached by
// keyboard, choosing a cluster and pressing its button shows that
// cluster's page (the window kept), and at 390 px the header fits.
func TestClusterPickerBrowser(t *testing.T) {
	browser.Require(t)
	srv := clusterServer(t, twoClusterLedger(t), "")
	ctx, shots := browser.NewBrowser(t, 1280, 900), browser.ShotDir(t)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	do("overview", chromedp.Navigate(srv.URL+"/accounting?"+clusterWindow), chromedp.WaitVisible("#cluster-picker"))
	// Tab reaches the picker: from the link before it, one Tab press
	// moves the focus to the select, and the next to its button.
	active := func() string {
		t.Helper()
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id || document.activeElement.tagName`))
		if err != nil {
			t.Fatalf("read the focus: %v", err)
		}
		return id
	}
	do("focus the link before the picker", chromedp.Focus(`nav.main a[href="/accounting"]`))
	do("press Tab", chromedp.KeyEvent("\t"))
	if got := active(); got != "cluster-picker" {
		t.Errorf("Tab from the Accounting link focused %s, not the cluster picker", got)
	}
	do("press Tab again", chromedp.KeyEvent("\t"))
	if got := active(); got != "BUTTON" {
		t.Errorf("Tab from the picker focused %s, not its Show button", got)
	}
	// The new page is the one whose period form carries the choice.
	do("choose gpu2", chromedp.Focus("#cluster-picker"), chromedp.SetValue("#cluster-picker", "gpu2"), chromedp.Click("form.clusters button"),
		chromedp.WaitReady(`form.period input[name="clusters"][value="gpu2"]`))
	h1, err := chromedp.Run(ctx, chromedp.Text("h1"))
	if err != nil || !strings.Contains(h1, "on gpu2") {
		t.Errorf("heading after choosing gpu2: %q (%v)", h1, err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "start=2026-01-01") {
		t.Errorf("the window was lost: %s (%v)", loc, err)
	}
	browser.Shot(t, ctx, shots, "clusters-gpu2.png")
	do("narrow", chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible("#cluster-picker"))
	if w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 390 {
		t.Errorf("at 390 px the page is %d px wide (%v)", w, err)
	}
	browser.Shot(t, ctx, shots, "clusters-390.png")
}

// manyNames is n distinct cluster names, comma-separated.
func manyNames(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "c%d", i)
	}
	return b.String()
}
