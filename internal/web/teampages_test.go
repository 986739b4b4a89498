package web_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/web"
)

// teamPagesFixture is a ledger of 120 jobs of team ml, one every ten
// minutes, the last ended twelve days and four hours before now, served
// on loopback.
func teamPagesFixture(t *testing.T) (srv string, jobs int, window string) {
	t.Helper()
	const n = 120
	t0 := reportfixture.T0
	var js []reportfixture.Job
	for i := 0; i < n; i++ {
		start := t0 + int64(i)*600
		js = append(js, reportfixture.Job{ID: uint64(1000 + i), User: "ann", Acct: "ml", Part: "gpu", Node: "n1", GPUs: 1, Start: start, End: start + 300})
	}
	last := t0 + (n-1)*600 + 300
	now := time.Unix(last+12*86400+4*3600, 0)
	db := reportfixture.BuildLedger(t, js, now)
	s := newBoardServer(t, web.Options{DB: db, Now: func() time.Time { return now },
		Check: report.CheckOptions{Stale: 15 * time.Minute, Lag: 10 * time.Minute, Forget: 30 * 24 * time.Hour}})
	w := fmt.Sprintf("start=%s&end=%s", time.Unix(t0, 0).UTC().Format("2006-01-02"), time.Unix(t0+2*86400, 0).UTC().Format("2006-01-02"))
	return s.URL, n, w
}

var (
	jobLink  = regexp.MustCompile(`<a href="/job/c1/(\d+)">`)
	nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
)

// TestTeamPageLists every job: a team's page lists all of its jobs in
// the window, 50 a page, each once, following "next page" from the first
// page to the last. It once stopped at 50 with a link to the JSON API.
func TestTeamPageListsEveryJob(t *testing.T) {
	srv, n, window := teamPagesFixture(t)
	seen := map[string]int{}
	var perPage []int
	url := srv + "/team/ml?" + window
	for pages := 0; url != ""; pages++ {
		if pages > 10 {
			t.Fatalf("more than 10 pages for %d jobs", n)
		}
		code, b := get(t, url)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", url, code, b)
		}
		ids := jobLink.FindAllStringSubmatch(string(b), -1)
		perPage = append(perPage, len(ids))
		for _, m := range ids {
			seen[m[1]]++
		}
		url = ""
		if m := nextLink.FindSubmatch(b); m != nil {
			url = srv + html.UnescapeString(string(m[1]))
		}
	}
	if diff := cmp.Diff([]int{50, 50, 20}, perPage); diff != "" {
		t.Errorf("jobs per page (-want +got):\n%s", diff)
	}
	if len(seen) != n {
		t.Errorf("%d distinct jobs over the pages, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("job %s listed %d times", id, k)
		}
	}
	for _, tc := range []struct {
		param string
		code  int
	}{{"page=0", http.StatusBadRequest}, {"page=x", http.StatusBadRequest}, {"page=201", http.StatusBadRequest}, {"page=4", http.StatusNotFound}} {
		if code, _ := get(t, srv+"/team/ml?"+window+"&"+tc.param); code != tc.code {
			t.Errorf("%s: status %d, want %d", tc.param, code, tc.code)
		}
	}
}

// TestSilentForIsADuration: the overview's stale nodes say how long
// they have been silent ("12d 4h"), not "12d 4h ago" under a "Silent
// for" heading.
func TestSilentForIsADuration(t *testing.T) {
	srv, _, _ := teamPagesFixture(t)
	code, b := get(t, srv+"/accounting")
	if code != http.StatusOK {
		t.Fatalf("GET /accounting: %d %.300s", code, b)
	}
	page := string(b)
	i := strings.Index(page, `id="stale"`)
	if i < 0 {
		t.Fatalf("no table of silent nodes: %.2000s", page)
	}
	table := page[i:]
	table = table[:strings.Index(table, "</table>")]
	cell := regexp.MustCompile(`<td class="num warn">([^<]*)</td>`).FindStringSubmatch(table)
	if cell == nil {
		t.Fatalf("no silent-for cell in %s", table)
	}
	if cell[1] != "12d 4h" {
		t.Errorf("silent for %q, want %q", cell[1], "12d 4h")
	}
}
