package reportcmd

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// seedResources stores each job's resources as ingest does from sacct, on the
// job's latest run.
func seedResources(t *testing.T, path string, now time.Time, us map[int64]store.Resources) {
	t.Helper()
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for id, u := range us {
		row := ledgerdb.Scalar[int64](t, path, `SELECT MAX(id) FROM jobs WHERE job_id = ?`, id)
		if err := b.SetResources(row, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestJobResources: gpuacct job adds the run's CPU, memory and time figures
// from sacct, with what to ask for next time, in text and JSON (golden
// files, testdata/resources, -update); a site without a gather plugin reads
// "not recorded"; a run sacct gave nothing for prints exactly what it
// printed before any resources were kept.
func TestJobResources(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 5400},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 1200},
		{ID: 9, User: "carol", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0 + 3600, End: t0 + 7200},
	}, now)
	job := func(args ...string) string {
		t.Helper()
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, append([]string{"job", dbOpt(path), "--tz", "UTC"}, args...)...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	beforeText, beforeJSON := job("9"), job("9", "--json")
	const gib = 1 << 30
	seedResources(t, path, now, map[int64]store.Resources{
		7: {AllocCPUs: 4, Nodes: 1, Elapsed: 90 * time.Minute, TimeLimit: store.Known(4 * 3600), ReqMem: store.Known(16 * gib),
			TotalCPU: store.Known(90 * 60 * 1000), MaxRSS: store.Known(79 * gib / 10)},
		// jobacct_gather/none: no CPU time, no RSS.
		8: {AllocCPUs: 2, Nodes: 1, Elapsed: 20 * time.Minute, TimeLimit: store.Known(3600), ReqMem: store.Known(4 * gib)},
	})
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"job7.txt", []string{"7"}},
		{"job7.json", []string{"7", "--json"}},
		{"job8.txt", []string{"8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, filepath.Join("testdata", "resources", tt.name), job(tt.args...))
		})
	}
	t.Run("none", func(t *testing.T) {
		if diff := cmp.Diff(beforeText, job("9")); diff != "" {
			t.Errorf("job 9's text changed (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(beforeJSON, job("9", "--json")); diff != "" {
			t.Errorf("job 9's JSON changed (-before +after):\n%s", diff)
		}
	})
}
