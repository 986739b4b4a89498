package demo

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/spool"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/clock"
)

// simNode is node gpu01 of cluster demo, two simulated GPUs of one model
// under the real agent on a test clock from 2026-11-20 08:00 UTC, with a
// 1 s interval and 1-minute segments shipped to its own incoming folder.
type simNode struct {
	t   *testing.T
	ctx context.Context
	log *slog.Logger
	clk *clock.Clock
	so  simcluster.Options
	cfg config.Config
	srv *sim.Server
	a   *agent.Agent
}

// newSimNode starts the node; shape, when set, shapes its GPUs (MIG
// layouts, loads) before the agent enumerates them.
func newSimNode(t *testing.T, model string, shape func(*sim.Server)) *simNode {
	t.Helper()
	n := &simNode{t: t, ctx: context.Background(), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		clk: clock.New(time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))}
	root := t.TempDir()
	n.so = simcluster.Options{Cluster: "demo", GPUsPerNode: 2, Model: model, Interval: time.Second, Segment: time.Minute, Ship: time.Second,
		NodeRoot: filepath.Join(root, "nodes"), Incoming: filepath.Join(root, "incoming")}
	if err := os.MkdirAll(n.so.Incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	n.cfg = simcluster.NodeConfig(n.so, "gpu01")
	srv, err := sim.New(sim.Options{Node: "gpu01", Count: 2, Model: model, Now: n.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	n.srv = srv
	if shape != nil {
		shape(srv)
	}
	lib, err := gpu.OpenInterface(n.ctx, srv, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lib.Close)
	if n.a, err = agent.New(n.cfg, n.so.Cluster, "gpu01", agent.Deps{Lib: lib, Now: n.clk.Now, Log: n.log}); err != nil {
		t.Fatal(err)
	}
	return n
}

// cgroup puts process pid in job's Slurm cgroup, as the agent reads it.
func (n *simNode) cgroup(pid uint32, job uint64) {
	n.t.Helper()
	dir := filepath.Join(n.cfg.Agent.ProcRoot, strconv.FormatUint(uint64(pid), 10))
	line := "0::/system.slice/slurmstepd.scope/job_" + strconv.FormatUint(job, 10) + "/step_0/user/task_0\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(line), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// event spools the hook's event of kind for job on GPU g, as the prolog
// (the epilog for an end) writes it.
func (n *simNode) event(kind record.Kind, job uint64, g record.GPU) {
	n.t.Helper()
	ev := record.Event{Schema: record.EventSchema, Kind: kind, Time: n.clk.Now(), Source: "prolog", Cluster: n.so.Cluster, Node: "gpu01",
		Job: record.Job{ID: job, User: "erin", Account: "nlp", Partition: "gpu", GPUs: []int{g.Minor}}, GPUs: []record.GPU{g}}
	if kind == record.JobEnd {
		ev.Source = "epilog"
	}
	ev.Key = record.EventKey(n.so.Cluster, job, 0, "gpu01", kind)
	data, err := json.Marshal(&ev)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := (spool.Dir{Path: n.cfg.Spool.Dir}).Write(record.EventFileName(n.so.Cluster, job, 0, "gpu01", kind), data); err != nil {
		n.t.Fatal(err)
	}
}

// step fails the test, naming what, when f fails.
func (n *simNode) step(what string, f func() error) {
	n.t.Helper()
	if err := f(); err != nil {
		n.t.Fatalf("%s: %v", what, err)
	}
}

// cycle advances the clock a second and runs one agent cycle.
func (n *simNode) cycle() {
	n.t.Helper()
	n.clk.Advance(time.Second)
	n.step("cycle", func() error { return n.a.Cycle(n.ctx) })
}

// ship ships the agent's spool to the incoming folder.
func (n *simNode) ship() error { _, err := n.a.Ship(n.ctx); return err }

// stopAndShip stops the agent and ships what it left.
func (n *simNode) stopAndShip() {
	n.t.Helper()
	n.step("stop", n.a.Stop)
	n.step("ship", n.ship)
}

// ingest runs the real ingest over everything shipped, with a ledger in
// a new folder, and fails unless every file is taken. The caller closes
// the ledger; path is its file.
func (n *simNode) ingest(since time.Time) (st *store.Ledger, path string) {
	n.t.Helper()
	icfg := ingestConfig(n.t.TempDir(), n.so.Incoming, n.so.Cluster, n.so.Interval)
	st, err := store.Open(n.ctx, store.Options{Path: icfg.Store.Path})
	if err != nil {
		n.t.Fatal(err)
	}
	in := Info{Cluster: n.so.Cluster, Nodes: 1, GPUs: 2, Model: n.so.Model}
	res, err := ingester(st, icfg, in, since, func() time.Time { return n.clk.Now().Add(time.Second) }, n.log).Pass(n.ctx)
	if err != nil {
		st.Close()
		n.t.Fatal(err)
	}
	if res.Quarantined != 0 || res.Refused != 0 || res.Deferred != 0 || res.Left != 0 || res.Files == 0 {
		q, _ := filepath.Glob(filepath.Join(icfg.Ingest.Quarantine, "*", "*"))
		st.Close()
		n.t.Fatalf("ingest: %+v, quarantined %v; want every file taken", res, q)
	}
	return st, icfg.Store.Path
}
