package demo

import (
	"math"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestJobShorterThanACycle: a job that the real prolog starts and the
// real epilog ends between two of its node's agent cycles has no sample.
// Everything the node ships for it is ingested by the real ingest, none
// quarantined (before, its aggregate with zero first and last times
// was), and the ledger holds the job, ended, on its GPU: the hooks'
// events carry the allocation.
func TestJobShorterThanACycle(t *testing.T) {
	n := newSimNode(t, "h100", nil)
	hd := simcluster.HookDeps(n.clk.Now, n.cfg.Agent.ProcRoot, n.srv)
	job := &simcluster.Job{ID: 9, Node: "gpu01", User: "erin", UID: 1005, Account: "nlp", Partition: "gpu", GPUs: []int{1}, Kind: simcluster.Busy, Exit: "0:0"}
	n.step("cycle", func() error { return n.a.Cycle(n.ctx) })
	n.clk.Advance(200 * time.Millisecond)
	job.Start = n.clk.Now()
	n.step("prolog", func() error { return simcluster.RunHook(n.ctx, record.JobStart, n.cfg, hd, job, n.so.Cluster, n.log) })
	n.step("ship", n.ship)
	n.clk.Advance(300 * time.Millisecond)
	job.End = n.clk.Now()
	n.step("epilog", func() error { return simcluster.RunHook(n.ctx, record.JobEnd, n.cfg, hd, job, n.so.Cluster, n.log) })
	n.step("ship", n.ship)
	n.clk.Advance(500 * time.Millisecond)
	n.step("cycle", func() error { return n.a.Cycle(n.ctx) })
	n.stopAndShip()

	st, _ := n.ingest(n.clk.Now().Add(-time.Hour))
	defer st.Close()
	var jobs []store.JobRow
	err := st.Jobs(n.ctx, store.JobsQuery{From: 0, To: math.MaxInt64, Clusters: []string{n.so.Cluster}},
		func(j *store.JobRow) bool { jobs = append(jobs, *j); return len(jobs) < 10 })
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].JobID != 9 || jobs[0].GPUs != 1 || jobs[0].End == nil {
		t.Errorf("the ledger's jobs: %+v; want job 9, ended, on 1 GPU", jobs)
	}
}
