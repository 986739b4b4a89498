package web_test

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// testBrowser drives Debian's chromium headless through the dashboard:
// the overview, a click to the busiest team, a click to one of its jobs,
// checking the numbers each page shows and taking screenshots
// ($GPUSUITE_WEB_SCREENSHOTS names a directory to keep them in).
func testBrowser(t *testing.T, f *fixture, win url.Values) {
	ctx, shots := browser.NewBrowser(t, 1440, 1000), browser.ShotDir(t)

	// The busiest team and what it should show.
	type team struct {
		name  string
		alloc int64
	}
	var teams []team
	var total int64
	for n, a := range f.truth.PerAccount {
		teams = append(teams, team{n, a})
		total += a
	}
	sort.Slice(teams, func(i, j int) bool { return teams[i].alloc > teams[j].alloc })
	top := teams[0]

	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	shot := func(name string) { t.Helper(); browser.Shot(t, ctx, shots, name) }
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	watchCSP(t, ctx)
	do("overview", chromedp.Navigate(f.url("/accounting?"+win.Encode())), chromedp.WaitVisible("#teams"))
	noCSPViolations(t, ctx, "overview")
	kpiAlloc, running := text("#kpi-alloc"), text("#running")
	shot("overview.png")
	if want := web.HoursOf(float64(total) / 3600); kpiAlloc != want {
		t.Errorf("overview allocated GPU-hours: page shows %q, truth %q", kpiAlloc, want)
	}
	if !strings.Contains(running, strconv.FormatUint(f.running.id, 10)) || !strings.Contains(running, f.running.node+":0") {
		t.Errorf("running jobs table lacks job %d on %s:0: %q", f.running.id, f.running.node, running)
	}

	// Click the first team of the table (the busiest).
	firstTeam := text("#teams tbody tr:first-child td.name a")
	do("team page", chromedp.Click("#teams tbody tr:first-child td.name a"), chromedp.WaitVisible("#jobtable"))
	h1, kpiAlloc := text("h1"), text("#kpi-alloc")
	noCSPViolations(t, ctx, "team page")
	shot("team.png")
	if firstTeam != top.name || h1 != "Team "+top.name {
		t.Errorf("first team %q, page %q; want the busiest team %q", firstTeam, h1, top.name)
	}
	if want := web.HoursOf(float64(top.alloc) / 3600); kpiAlloc != want {
		t.Errorf("team %s allocated GPU-hours: page shows %q, truth %q", top.name, kpiAlloc, want)
	}

	// Order by most GPU-hours and click the first job.
	do("order jobs", chromedp.Click(`.sorts a[href*="sort=alloc"]`), chromedp.WaitVisible(`.sorts a.on[href*="sort=alloc"]`))
	jobID := text("#jobtable tbody tr:first-child td:first-child a")
	do("job page", chromedp.Click("#jobtable tbody tr:first-child td:first-child a"), chromedp.WaitVisible("#notes"))
	h1, kpiAlloc = text("h1"), text("#kpi-alloc")
	notes, gpus := text("#notes"), text("#gpus")
	noCSPViolations(t, ctx, "job page")
	shot("job.png")
	var want *int64
	var gpuCount int
	var wantNode string
	for _, j := range f.truth.JobList {
		if strconv.FormatUint(j.ID, 10) == jobID {
			if j.Account != top.name {
				t.Errorf("job %s is %s's, not team %s's", jobID, j.Account, top.name)
			}
			a := int64(len(j.GPUs)) * (j.End - j.Start)
			want, gpuCount, wantNode = &a, len(j.GPUs), j.Node
		}
	}
	for _, j := range f.truth.JobList {
		if j.Account == top.name && want != nil && int64(len(j.GPUs))*(j.End-j.Start) > *want {
			t.Errorf("job %s is first by GPU-hours but job %d has more", jobID, j.ID)
			break
		}
	}
	if want == nil {
		t.Fatalf("job %q is not a generated job", jobID)
	}
	if h1 != "Job "+jobID || kpiAlloc != web.HoursOf(float64(*want)/3600) {
		t.Errorf("job page: %q with %q GPU-h, want Job %s with %s", h1, kpiAlloc, jobID, web.HoursOf(float64(*want)/3600))
	}
	if strings.Count(gpus, wantNode) != gpuCount {
		t.Errorf("GPU table shows %d rows on %s, want %d:\n%s", strings.Count(gpus, wantNode), wantNode, gpuCount, gpus)
	}
	// The notes are gpuacct job's.
	cliNotes := string(f.cliOut(t, time.Now(), "job", jobID))
	for _, line := range strings.Split(strings.TrimSpace(notes), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "What to change" && !strings.Contains(strings.Join(strings.Fields(cliNotes), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("page note %q is not in gpuacct job's output:\n%s", line, cliNotes)
		}
	}
}
