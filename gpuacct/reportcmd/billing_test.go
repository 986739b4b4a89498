package reportcmd

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// billedJobsLedger is a ledger of jobs 7 (alice, 2 GPUs, 2 h) and 8 (bob,
// 1 GPU, 1 h) on partition gpu; with weights, the partition's
// TRESBillingWeights are in force from before them.
func billedJobsLedger(t *testing.T, weights string, now time.Time) string {
	t.Helper()
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if weights != "" {
		if err := b.SetBillingWeights("c1", store.BillingSlurm, t0-3600, []store.BillingWeights{{Partition: "gpu", Weights: weights}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range []fxJob{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 7200},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0 + 3600, End: t0 + 7200},
	} {
		for _, k := range []record.Kind{record.JobStart, record.JobEnd} {
			at := j.Start
			if k == record.JobEnd {
				at = j.End
			}
			ev := record.Event{Schema: record.EventSchema, Kind: k, Time: time.Unix(at, 0).UTC(), Cluster: "c1", Node: j.Node,
				Key: record.EventKey("c1", j.ID, 0, j.Node, k)}
			ev.Job = record.Job{ID: j.ID, User: j.User, Account: j.Acct, Partition: j.Part, Node: j.Node, Cluster: "c1"}
			for g := range j.GPUs {
				idx := g
				ev.Job.GPUs = append(ev.Job.GPUs, g)
				ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: "GPU-" + j.Node + "-" + strconv.Itoa(g), Model: "NVIDIA H100 80GB HBM3"})
			}
			if k == record.JobEnd {
				ev.Job.Exit = &record.Exit{}
			}
			if err := b.Event(&ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return l.Loc()
}

// TestJobAndExportBilling: gpuacct job and gpuacct export jobs show the
// billing of a billed run (golden files, testdata/billing, -update: job
// 7's 2 GPUs × weight 4 × 2 h are 16 unit-hours, 57,600 unit-seconds),
// and print exactly what they printed before where nothing was billed.
func TestJobAndExportBilling(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	for _, tt := range []struct {
		name, weights string
		args          []string
	}{
		{"job.txt", "GRES/gpu=4.0", []string{"job", "7"}},
		{"job.json", "GRES/gpu=4.0", []string{"job", "7", "--json"}},
		{"export.csv", "GRES/gpu=4.0", []string{"export", "jobs", "--start", "2026-01-01", "--end", "2026-01-02"}},
		{"export.jsonl", "GRES/gpu=4.0", []string{"export", "jobs", "--start", "2026-01-01", "--end", "2026-01-02", "--format", "jsonl"}},
		// no weights: no billing line, key or column
		{"job-unbilled.txt", "", []string{"job", "7"}},
		{"job-unbilled.json", "", []string{"job", "7", "--json"}},
		{"export-unbilled.csv", "", []string{"export", "jobs", "--start", "2026-01-01", "--end", "2026-01-02"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := billedJobsLedger(t, tt.weights, now)
			d, out, _ := testDeps(now, nil)
			if err := run(t, d, append(tt.args, dbOpt(path), "--tz", "UTC")...); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "billing", tt.name), out.String())
		})
	}
}
