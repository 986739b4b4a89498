package demo

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/spool"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/clock"
)

// TestMIGSliceJobEnergy: an A100 cut into a 3g.40gb and a 4g.40gb slice,
// a job on each and a job on a whole second A100, under the real agent
// and the real ingest. Each slice job's ledger energy (the job's total,
// which team and node reports sum) is its share (3/7, 4/7) of its
// parent's: the two sum to the parent's energy over their sampled time,
// and the node's energy is the whole GPU's job's and that, the parent's
// counted once. Before, slice jobs had 0.
func TestMIGSliceJobEnergy(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := clock.New(time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
	root := t.TempDir()
	so := simcluster.Options{Cluster: "demo", GPUsPerNode: 2, Model: "a100", Interval: time.Second, Segment: time.Minute, Ship: time.Second,
		NodeRoot: filepath.Join(root, "nodes"), Incoming: filepath.Join(root, "incoming")}
	if err := os.MkdirAll(so.Incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := simcluster.NodeConfig(so, "gpu01")
	srv, err := sim.New(sim.Options{Node: "gpu01", Count: 2, Model: "a100", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	const parentMW, wholeMW = 210_000, 120_000
	migs := srv.Device(1).EnableMIGLayout([]string{"3g.40gb", "4g.40gb"})
	srv.Device(1).SetLoad(sim.Load{PowerMW: parentMW, TempC: 45, SMClockMHz: 1400})
	lib, err := gpu.OpenInterface(ctx, srv, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	a, err := agent.New(cfg, so.Cluster, "gpu01", agent.Deps{Lib: lib, Now: clk.Now, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	cgroup := func(pid uint32, job uint64) {
		dir := filepath.Join(cfg.Agent.ProcRoot, strconv.FormatUint(uint64(pid), 10))
		line := "0::/system.slice/slurmstepd.scope/job_" + strconv.FormatUint(job, 10) + "/step_0/user/task_0\n"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// job 41: the whole GPU 0; jobs 42 and 43: the slices of GPU 1
	cgroup(141, 41)
	srv.Device(0).SetLoad(sim.Load{GPUUtil: 50, MemUsedMiB: 6000, PowerMW: wholeMW, TempC: 40, SMClockMHz: 1400,
		Procs: []nvml.ProcessInfo{{Pid: 141, UsedGpuMemory: 6000 << 20}}})
	for i, job := range []uint64{42, 43} {
		pid := uint32(100 + job)
		cgroup(pid, job)
		migs[i].SetProcs([]nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 2 << 30}})
	}
	event := func(kind record.Kind, job uint64, g record.GPU) {
		t.Helper()
		ev := record.Event{Schema: record.EventSchema, Kind: kind, Time: clk.Now(), Source: "prolog", Cluster: so.Cluster, Node: "gpu01",
			Job: record.Job{ID: job, User: "erin", Account: "nlp", Partition: "gpu", GPUs: []int{g.Minor}}, GPUs: []record.GPU{g}}
		if kind == record.JobEnd {
			ev.Source = "epilog"
		}
		ev.Key = record.EventKey(so.Cluster, job, 0, "gpu01", kind)
		data, err := json.Marshal(&ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := (spool.Dir{Path: cfg.Spool.Dir}).Write(record.EventFileName(so.Cluster, job, 0, "gpu01", kind), data); err != nil {
			t.Fatal(err)
		}
	}
	idx0, idx1, ci := 0, 1, 0
	gpus := map[uint64]record.GPU{41: {Minor: 0, Index: &idx0, UUID: sim.UUID("gpu01", 0)}}
	for i, p := range []string{"3g.40gb", "4g.40gb"} {
		gi := i + 1
		gpus[uint64(42+i)] = record.GPU{Minor: 1, Index: &idx1, UUID: migs[i].UUID(), Parent: sim.UUID("gpu01", 1), Profile: p, GI: &gi, CI: &ci}
	}
	step := func(what string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	cycle := func() { clk.Advance(time.Second); step("cycle", func() error { return a.Cycle(ctx) }) }
	cycle()
	start := clk.Now()
	for _, job := range []uint64{41, 42, 43} {
		event(record.JobStart, job, gpus[job])
	}
	for range 21 {
		cycle()
	}
	clk.Advance(500 * time.Millisecond)
	for _, job := range []uint64{41, 42, 43} {
		event(record.JobEnd, job, gpus[job])
	}
	cycle()
	step("stop", a.Stop)
	step("ship", func() error { _, err := a.Ship(ctx); return err })

	dir := t.TempDir()
	icfg := ingestConfig(dir, so.Incoming, so.Cluster, so.Interval)
	st, err := store.Open(ctx, store.Options{Path: icfg.Store.Path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := Info{Cluster: so.Cluster, Nodes: 1, GPUs: 2, Model: "a100"}
	res, err := ingester(st, icfg, in, start.Add(-time.Hour), func() time.Time { return clk.Now().Add(time.Second) }, log).Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Quarantined != 0 || res.Refused != 0 || res.Deferred != 0 || res.Files == 0 {
		t.Fatalf("ingest: %+v; want every file taken", res)
	}

	jobs := map[int64]store.Usage{}
	from, to := start.Add(-time.Hour).Unix(), clk.Now().Add(time.Hour).Unix()
	step("jobs", func() error {
		return st.Jobs(ctx, store.JobsQuery{From: from, To: to}, func(j *store.JobRow) bool { jobs[j.JobID] = j.Usage; return true })
	})
	if len(jobs) != 3 {
		t.Fatalf("jobs in the ledger: %v; want 41, 42 and 43", jobs)
	}
	// The sim draws constant power: a job's energy is its power × its
	// sampled seconds, to the millijoule.
	near := func(what string, got int64, want float64) {
		t.Helper()
		if math.Abs(float64(got)-want) > 4 {
			t.Errorf("%s: %d mJ, want %.0f", what, got, want)
		}
	}
	w, s3, s4 := jobs[41], jobs[42], jobs[43]
	near("whole GPU job 41", w.EnergyMJ, wholeMW*w.SampleS)
	near("3g.40gb job 42", s3.EnergyMJ, parentMW*s3.SampleS*3/7)
	near("4g.40gb job 43", s4.EnergyMJ, parentMW*s4.SampleS*4/7)
	if s3.SampleS != s4.SampleS || s3.SampleS < 20 {
		t.Fatalf("slice jobs sampled %v and %v s; want the same 20 s or more", s3.SampleS, s4.SampleS)
	}
	near("the two slice jobs", s3.EnergyMJ+s4.EnergyMJ, parentMW*s3.SampleS)
	var node int64
	step("facts", func() error {
		return st.Facts(ctx, store.FactQuery{Grain: store.Daily, From: from - from%86400, To: to - to%86400 + 86400},
			func(r *store.FactRow) { node += r.EnergyMJ })
	})
	if node != w.EnergyMJ+s3.EnergyMJ+s4.EnergyMJ {
		t.Errorf("the node's energy: %d mJ, want its jobs' %d + %d + %d", node, w.EnergyMJ, s3.EnergyMJ, s4.EnergyMJ)
	}
}
