package web_test

import (
	"fmt"
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
	benchGets(b, srv, []benchPath{
		{"page", fmt.Sprintf("/job/c1/%d", j.ID)},
		{"series", fmt.Sprintf("/api/v1/jobs/c1/%d/series", j.ID)},
	})
}
