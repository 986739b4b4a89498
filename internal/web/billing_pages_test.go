package web_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// billedLedger is one cluster's ledger where partition gpu bills a GPU
// 2 units (TRESBillingWeights) and partition big has no weights: alice
// (vision) runs 2 GPUs for 1 h on gpu, bob (nlp) 1 GPU for 1 h on gpu,
// carol (nlp) 4 GPUs for 30 min on big.
func billedLedger(t *testing.T) string {
	t.Helper()
	t0 := reportfixture.T0
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(ctx, clusterNow)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetBillingWeights("c1", store.BillingSlurm, t0-3600, []store.BillingWeights{{Partition: "gpu", Weights: "GRES/gpu=2.0"}}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 2, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 9, User: "carol", Acct: "nlp", Part: "big", Node: "n3", GPUs: 4, Start: t0 + 3600, End: t0 + 5400},
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

// TestBilledPageBytes: where the ledger billed something, the overview's
// teams table, a team's users table and a user's teams table have a
// Billing column after Allocated (testdata/bytes/billed-*.html,
// -update): vision 4 unit-h, nlp 2 (carol's partition has no weights:
// 0); TestPageBytes holds the pages of a ledger that billed nothing.
func TestBilledPageBytes(t *testing.T) {
	db := billedLedger(t)
	srv := clusterServer(t, db, "")
	for _, tt := range []struct{ name, path string }{
		{"billed-overview.html", "/accounting?" + clusterWindow},
		{"billed-team.html", "/team/nlp?" + clusterWindow},
		{"billed-user.html", "/user/alice?" + clusterWindow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, b := getJSON(t, srv.URL+tt.path, nil)
			b = bytes.ReplaceAll(b, []byte(db), []byte("LEDGER"))
			golden(t, filepath.Join("bytes", tt.name), append([]byte(fmt.Sprintf("HTTP %d\n", code)), b...))
		})
	}
}
