package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestJobResources: the job's page and its JSON show the run's CPU, memory
// and time figures from sacct with what to ask for next time, "not
// recorded" where the site gathers none, and nothing for a run sacct
// gave no resources for.
func TestJobResources(t *testing.T) {
	t0 := reportfixture.T0
	now := time.Unix(t0+86400, 0)
	db := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 5400},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 9, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
	}, now)
	st, err := store.Open(context.Background(), store.At(db))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id int64) int64 { return ledgerdb.Scalar[int64](t, db, `SELECT id FROM jobs WHERE job_id = ?`, id) }
	err = b.SetResources(row(7), store.Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 90 * time.Minute, TimeLimit: store.Known(4 * 3600),
		ReqMem: store.Known(16 << 30), TotalCPU: store.Known(90 * 60 * 1000), MaxRSS: store.Known(79 << 30 / 10)})
	if err == nil {
		err = b.SetResources(row(8), store.Resources{AllocCPUs: 2, Nodes: 1, Elapsed: time.Hour, TimeLimit: store.Known(3600), ReqMem: store.Known(1 << 30)})
	}
	if err == nil {
		err = b.Commit()
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	get := func(t *testing.T, path string) string {
		t.Helper()
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	type resources struct {
		CPU         *float64 `json:"cpu_efficiency_pct"`
		NotRecorded string   `json:"not_recorded"`
		Suggestions []string `json:"suggestions"`
	}
	pct := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		job  string
		want resources
		page []string
	}{
		{"7", resources{CPU: pct(25), Suggestions: []string{"2 cores would do (1.0 busy + 20 %)", "--mem=10G would do (peak 7.9 GiB + 20 %)",
			"--time=02:00:00 would do"}},
			[]string{`id="usage"`, "<th>memory</th><td>peak 7.9 GiB of 16.0 GiB per node (49%)</td><td>--mem=10G would do (peak 7.9 GiB &#43; 20 %)</td>"}},
		{"8", resources{NotRecorded: "JobAcctGatherType is none", Suggestions: []string{}},
			[]string{"<th>CPU efficiency</th><td>not recorded (JobAcctGatherType is none)</td>"}},
	} {
		t.Run(tt.job, func(t *testing.T) {
			var doc struct {
				Resources resources `json:"resources"`
			}
			if err := json.Unmarshal([]byte(get(t, "/api/v1/jobs/c1/"+tt.job)), &doc); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, doc.Resources); diff != "" {
				t.Errorf("job %s's resources (-want +got):\n%s", tt.job, diff)
			}
			page := get(t, "/job/c1/"+tt.job)
			for _, w := range tt.page {
				if !strings.Contains(page, w) {
					t.Errorf("job %s's page lacks %q", tt.job, w)
				}
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		if page := get(t, "/job/c1/9"); strings.Contains(page, `id="usage"`) {
			t.Errorf("job 9 has no resources, its page shows a section")
		}
		if body := get(t, "/api/v1/jobs/c1/9"); strings.Contains(body, `"resources"`) {
			t.Errorf("job 9 has no resources, its JSON has the key:\n%s", body)
		}
	})
}
