package demo

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/clock"
)

// TestJobShorterThanACycle: a job that the real prolog starts and the
// real epilog ends between two of its node's agent cycles has no sample.
// Everything the node ships for it is ingested by the real ingest, none
// quarantined (before, its aggregate with zero first and last times
// was), and the ledger holds the job, ended, on its GPU: the hooks'
// events carry the allocation.
func TestJobShorterThanACycle(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := clock.New(time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
	root := t.TempDir()
	so := simcluster.Options{Cluster: "demo", GPUsPerNode: 2, Model: "h100", Interval: time.Second, Segment: time.Minute, Ship: time.Second,
		NodeRoot: filepath.Join(root, "nodes"), Incoming: filepath.Join(root, "incoming")}
	if err := os.MkdirAll(so.Incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := simcluster.NodeConfig(so, "gpu01")
	srv, err := sim.New(sim.Options{Node: "gpu01", Count: 2, Model: "h100", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	lib, err := gpu.OpenInterface(ctx, srv, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	a, err := agent.New(cfg, so.Cluster, "gpu01", agent.Deps{Lib: lib, Now: clk.Now, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	hd := simcluster.HookDeps(clk.Now, cfg.Agent.ProcRoot, srv)
	job := &simcluster.Job{ID: 9, Node: "gpu01", User: "erin", UID: 1005, Account: "nlp", Partition: "gpu", GPUs: []int{1}, Kind: simcluster.Busy, Exit: "0:0"}
	step := func(what string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	ship := func() error { _, err := a.Ship(ctx); return err }
	step("cycle", func() error { return a.Cycle(ctx) })
	clk.Advance(200 * time.Millisecond)
	job.Start = clk.Now()
	step("prolog", func() error { return simcluster.RunHook(ctx, record.JobStart, cfg, hd, job, so.Cluster, log) })
	step("ship", ship)
	clk.Advance(300 * time.Millisecond)
	job.End = clk.Now()
	step("epilog", func() error { return simcluster.RunHook(ctx, record.JobEnd, cfg, hd, job, so.Cluster, log) })
	step("ship", ship)
	clk.Advance(500 * time.Millisecond)
	step("cycle", func() error { return a.Cycle(ctx) })
	step("stop", a.Stop)
	step("ship", ship)

	dir := t.TempDir()
	icfg := ingestConfig(dir, so.Incoming, so.Cluster, so.Interval)
	st, err := store.Open(ctx, store.Options{Path: icfg.Store.Path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := Info{Cluster: so.Cluster, Nodes: 1, GPUs: 2, Model: "h100"}
	res, err := ingester(st, icfg, in, clk.Now().Add(-time.Hour), func() time.Time { return clk.Now().Add(time.Second) }, log).Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Quarantined != 0 || res.Refused != 0 || res.Deferred != 0 || res.Left != 0 || res.Files == 0 {
		q, _ := filepath.Glob(filepath.Join(icfg.Ingest.Quarantine, "*", "*"))
		t.Errorf("ingest: %+v, quarantined %v; want every file taken", res, q)
	}
	var jobs []store.JobRow
	err = st.Jobs(ctx, store.JobsQuery{From: 0, To: math.MaxInt64, Clusters: []string{so.Cluster}},
		func(j *store.JobRow) bool { jobs = append(jobs, *j); return len(jobs) < 10 })
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].JobID != 9 || jobs[0].GPUs != 1 || jobs[0].End == nil {
		t.Errorf("the ledger's jobs: %+v; want job 9, ended, on 1 GPU", jobs)
	}
}
