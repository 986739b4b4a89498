package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/web"
)

// BenchmarkWorstJobPage answers the page and the series of the issue's
// worst job (issue 29, item 8): 8 GPUs × 20 days sampled every 10 s,
// 1.38 M samples, still running so that its figures come from the
// samples too. docs/performance.md, "web".
func BenchmarkWorstJobPage(b *testing.B) {
	j := reportfixture.LongJob{ID: 77, GPUs: 8, Seconds: 20 * 86400, Interval: 10, Running: true}
	now := time.Unix(reportfixture.T0+j.Seconds, 0)
	db := reportfixture.BuildLongJob(b, j, now)
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, Reopen: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, p := range []struct{ name, path string }{
		{"page", fmt.Sprintf("/job/c1/%d", j.ID)},
		{"series", fmt.Sprintf("/api/v1/jobs/c1/%d/series", j.ID)},
	} {
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
