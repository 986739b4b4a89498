package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/web"
)

// BenchmarkPages measures the overview and the teams API on an existing
// ledger, read-only: GPUSUITE_WEB_BENCH_DB names it (for example the
// generated year of bench/year.sh) and GPUSUITE_WEB_BENCH_END the end of
// its data (default now). docs/performance.md, "web".
func BenchmarkPages(b *testing.B) {
	db := os.Getenv("GPUSUITE_WEB_BENCH_DB")
	if db == "" {
		b.Skip("GPUSUITE_WEB_BENCH_DB is not set")
	}
	now := time.Now()
	if s := os.Getenv("GPUSUITE_WEB_BENCH_END"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			b.Fatal(err)
		}
		now = t
	}
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, Check: report.CheckOptions{Stale: 15 * time.Minute,
		Lag: 10 * time.Minute, Forget: 7 * 24 * time.Hour}, Reopen: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	// The smallest team of the last 7 days: its job list has to look
	// furthest back.
	var teams struct {
		Rows []struct {
			Team string `json:"team"`
		} `json:"rows"`
	}
	resp, err := http.Get(srv.URL + "/api/v1/report/teams")
	if err != nil {
		b.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&teams)
	resp.Body.Close()
	if err != nil || len(teams.Rows) == 0 {
		b.Fatalf("teams of the last 7 days: %v %+v", err, teams)
	}
	small := url.PathEscape(teams.Rows[len(teams.Rows)-1].Team)
	year := "start=" + now.AddDate(-1, 0, 0).Format("2006-01-02") + "&end=" + now.Format("2006-01-02")
	benchGets(b, srv, []benchPath{
		{"overview-7d", "/accounting"},
		{"overview-30d", "/accounting?start=now-30days"},
		{"overview-year", "/accounting?" + year},
		{"overview-year-tokyo", "/accounting?tz=Asia/Tokyo&" + year},
		{"overview-year-st-johns", "/accounting?tz=America/St_Johns&" + year},
		{"api-teams-7d", "/api/v1/report/teams"},
		{"api-teams-year-month", "/api/v1/report/teams?period=month&" + year},
		{"api-users-year", "/api/v1/report/users?" + year},
		{"api-jobs-7d", "/api/v1/jobs?limit=100"},
		{"api-running", "/api/v1/jobs/running"},
		{"team-7d", "/team/" + small},
		{"api-jobs-team-7d", "/api/v1/jobs?team=" + small},
		{"api-jobs-failed-7d", "/api/v1/jobs?state=failed"},
	})
}

// benchPath is one page or API answer a benchmark times.
type benchPath struct{ name, path string }

// benchGets times a GET of each path on srv, one sub-benchmark each,
// reporting the answer's size; an answer other than 200 fails it.
func benchGets(b *testing.B, srv *httptest.Server, paths []benchPath) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := http.Get(srv.URL + p.path)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", p.path, resp.StatusCode)
				}
				b.ReportMetric(float64(n), "bytes/op")
			}
		})
	}
}
