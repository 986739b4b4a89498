package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/ship"
	"github.com/aicloud/gpusuite/internal/sim"
)

func u32(v uint32) *uint32 { return &v }

// A job's samples and aggregate arrive attributed to it, with energy taken
// across a counter reset from the prolog's reading to the epilog's.
func TestJobLifecycle(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.sim.Device(0).SetWorkload(sim.Busy(80, 1000))
	e.cgroup(1000, 42)
	e.event(record.JobStart, 42, 0)
	if _, err := e.ship(); err != nil {
		t.Fatal(err)
	}
	e.cycles(60)
	e.ship()                      // one rolling version of the aggregate leaves
	e.sim.Device(0).ResetEnergy() // driver reload right after a sample
	e.cycles(60)
	e.event(record.JobEnd, 42, 0)
	e.cycles(5) // the GPU is no longer the job's
	e.stopAndShip()
	if left := spoolNames(t, e.cfg.Spool.Dir); len(left) != 0 {
		t.Errorf("spool keeps %v after shipping", left)
	}
	got := e.arrived()
	if len(got.events) != 2 {
		t.Errorf("%d events shipped, want 2", len(got.events))
	}
	uuid0 := sim.UUID(testNode, 0)
	key := record.JobGPUKey(testCluster, 42, 0, testNode, uuid0)
	agg, ok := got.aggs[key]
	if !ok {
		t.Fatalf("no aggregate %s; have %v", key, got.names)
	}
	want := record.JobGPU{
		Schema: record.JobGPUSchema, Key: key, Final: true, Cluster: testCluster, Node: testNode, Job: 42,
		User: "alice", Account: "physics", Partition: "gpu", UUID: uuid0, Index: 0, Model: agg.Model,
		Samples: 120, SampleSeconds: 120, UtilSeconds: 96, UtilMax: 80, MemMaxMiB: 40000, MemTotalMiB: agg.MemTotalMiB,
		EnergyMJ:    (150000 + 4000*80) * 120, // mW × s: exact, the reset lost nothing
		IdleSeconds: 0,
		Quality:     map[string]uint64{"energy_counter_reset": 1},
	}
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".Seq" || n == ".First" || n == ".Last"
	}, cmp.Ignore())
	if diff := cmp.Diff(want, agg, ignore, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("aggregate (-want +got):\n%s", diff)
	}
	if agg.Model == "" || agg.MemTotalMiB == 0 {
		t.Errorf("aggregate lacks model or memory total: %+v", agg)
	}
	var mine, other, unattributed int
	for _, s := range got.samples {
		switch {
		case s.UUID == uuid0 && len(s.Jobs) == 1 && s.Jobs[0].Job == 42:
			mine++
			if s.Jobs[0].Idle || s.Jobs[0].Share != 1 || s.GPUUtil == nil || *s.GPUUtil != 80 {
				t.Errorf("sample of the busy job: %+v", s.Jobs)
			}
		case len(s.Jobs) == 0:
			unattributed++
		default:
			other++
		}
	}
	if mine != 120 || unattributed != 125+5 || other != 0 {
		t.Errorf("samples: %d of job 42 (want 120), %d unattributed (want 130), %d other", mine, unattributed, other)
	}
	if len(got.allAggs) < 2 {
		t.Errorf("aggregate shipped %d times; want a rolling version per segment and a final one", len(got.allAggs))
	}
}

// An allocated GPU on which nothing runs is counted as idle.
func TestIdleAllocatedGPU(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.event(record.JobStart, 7, 0)
	e.ship()
	e.cycles(30)
	e.event(record.JobEnd, 7, 0)
	e.ship()
	e.a.Stop()
	e.ship()
	agg := e.arrived().aggs[record.JobGPUKey(testCluster, 7, 0, testNode, sim.UUID(testNode, 0))]
	if agg.IdleSeconds != 30 || agg.UtilSeconds != 0 || !agg.Final {
		t.Errorf("idle job: idle %v s, util %v s, final %v; want 30, 0, true", agg.IdleSeconds, agg.UtilSeconds, agg.Final)
	}
}

func TestAttribute(t *testing.T) {
	job := func(j uint64) *Alloc { return &Alloc{Job: j} }
	proc := func(pid uint32, mib uint64) nvml.ProcessInfo {
		return nvml.ProcessInfo{Pid: pid, UsedGpuMemory: mib << 20}
	}
	owners := map[uint32]uint64{1: 42, 2: 43, 3: 7, 4: 0}
	own := func(pid uint32) (uint64, error) {
		if pid == 99 {
			return 0, errors.New("open /proc/99/cgroup: permission denied")
		}
		return owners[pid], nil
	}
	tests := []struct {
		name        string
		util        *uint32
		procs       []nvml.ProcessInfo
		allocs      []*Alloc
		wantJobs    []record.JobShare
		wantForeign []uint32
		wantMissing []string
	}{
		{name: "busy job", util: u32(90), procs: []nvml.ProcessInfo{proc(1, 100)}, allocs: []*Alloc{job(42)},
			wantJobs: []record.JobShare{{Job: 42, Share: 1}}},
		{name: "allocated, no process", util: u32(0), allocs: []*Alloc{job(42)},
			wantJobs: []record.JobShare{{Job: 42, Share: 1, Idle: true}}},
		{name: "process but under threshold", util: u32(0), procs: []nvml.ProcessInfo{proc(1, 100)}, allocs: []*Alloc{job(42)},
			wantJobs: []record.JobShare{{Job: 42, Share: 1, Idle: true}}},
		{name: "foreign process of another job", util: u32(50), procs: []nvml.ProcessInfo{proc(3, 100)}, allocs: []*Alloc{job(42)},
			wantJobs: []record.JobShare{{Job: 42, Share: 1, Idle: true}}, wantForeign: []uint32{3}},
		{name: "process outside any job on a free GPU", util: u32(50), procs: []nvml.ProcessInfo{proc(4, 100)},
			wantForeign: []uint32{4}},
		{name: "unreadable cgroup counts as the job's", util: u32(50), procs: []nvml.ProcessInfo{proc(99, 100)}, allocs: []*Alloc{job(42)},
			wantJobs: []record.JobShare{{Job: 42, Share: 1}}, wantMissing: []string{"cgroup: unreadable"}},
		{name: "shared GPU split by process memory", util: u32(80),
			procs:    []nvml.ProcessInfo{proc(1, 299), proc(2, 99)},
			allocs:   []*Alloc{job(42), job(43)},
			wantJobs: []record.JobShare{{Job: 42, Share: 0.75}, {Job: 43, Share: 0.25}}},
		{name: "shared GPU, one job idle", util: u32(80), procs: []nvml.ProcessInfo{proc(1, 99)},
			allocs:   []*Alloc{job(42), job(43)},
			wantJobs: []record.JobShare{{Job: 42, Share: 1}, {Job: 43, Share: 0, Idle: true}}},
		{name: "shared GPU, nobody running", util: u32(0),
			allocs:   []*Alloc{job(42), job(43)},
			wantJobs: []record.JobShare{{Job: 42, Share: 0.5, Idle: true}, {Job: 43, Share: 0.5, Idle: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gpu.Reading{UUID: "GPU-x", GPUUtil: tt.util, Procs: tt.procs, ProcsOK: true}
			s := attribute(r, time.Unix(0, 0), tt.allocs, own, 1)
			if diff := cmp.Diff(tt.wantJobs, s.Jobs); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			var foreign []uint32
			for _, p := range s.Procs {
				if p.Foreign {
					foreign = append(foreign, p.PID)
				}
				if p.PID == 99 && p.CgroupError == "" {
					t.Errorf("unreadable cgroup not noted on the process")
				}
			}
			if diff := cmp.Diff(tt.wantForeign, foreign); diff != "" {
				t.Errorf("foreign (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMissing, s.Missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

// A GPU lost mid-job: its metrics are missing with the reason, the other
// GPU keeps going, NVML is initialised again, and sampling resumes.
func TestLostGPU(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.sim.Device(0).SetWorkload(sim.Busy(50, 1000))
	e.cgroup(1000, 5)
	e.event(record.JobStart, 5, 0)
	e.ship()
	e.cycles(10)
	e.sim.Device(0).Lose()
	e.cycles(10)
	e.sim.Device(0).Recover()
	e.cycles(10)
	e.event(record.JobEnd, 5, 0)
	e.ship()
	e.a.Stop()
	e.ship()
	got := e.arrived()
	var lost, good0, good1 int
	for _, s := range got.samples {
		switch {
		case s.Index == 1 && s.GPUUtil != nil:
			good1++
		case s.Index == 0 && s.GPUUtil != nil:
			good0++
		case s.Index == 0:
			lost++
			if s.EnergyMJ != nil || !strings.Contains(strings.Join(s.Missing, ","), "ERROR_GPU_IS_LOST") {
				t.Errorf("lost sample: %+v", s)
			}
		}
	}
	if good1 != 30 {
		t.Errorf("healthy GPU sampled %d times, want 30", good1)
	}
	if good0 < 15 || lost < 5 {
		t.Errorf("lost GPU: %d good and %d lost samples; want sampling to resume after recovery", good0, lost)
	}
	agg := got.aggs[record.JobGPUKey(testCluster, 5, 0, testNode, sim.UUID(testNode, 0))]
	if agg.Quality["gpu_util: ERROR_GPU_IS_LOST"] == 0 {
		t.Errorf("aggregate quality does not count the lost samples: %v", agg.Quality)
	}
	// energy is a counter: the gap while lost is still counted
	if want := uint64(150000+4000*50) * 30; agg.EnergyMJ != want {
		t.Errorf("energy %d mJ, want %d", agg.EnergyMJ, want)
	}
	if v := testutilCount(t, e.a, `gpusuite_agent_nvml_errors_total{code="ERROR_GPU_IS_LOST"}`); v == 0 {
		t.Errorf("NVML errors by code not counted")
	}
}

// A hung driver: the cycle returns within the bound, the GPUs are flagged,
// and a stuck GPU does not pile up goroutines.
func TestHungGPUIsBounded(t *testing.T) {
	s, err := sim.New(sim.Options{Node: testNode, Count: 2, Model: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	lib, err := gpu.OpenInterface(context.Background(), s, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lib.Timeout = 100 * time.Millisecond
	devs, _, err := lib.Devices(context.Background())
	if err != nil || len(devs) != 2 {
		t.Fatalf("devices: %v, %v", devs, err)
	}
	s.HangNow()
	defer s.Release()
	var after1 int
	for round := 0; round < 3; round++ {
		start := time.Now()
		rs := lib.SampleAll(context.Background(), devs)
		if el := time.Since(start); el > time.Second {
			t.Fatalf("cycle took %s under a hung driver", el)
		}
		for _, r := range rs {
			if r.GPUUtil != nil || !strings.Contains(strings.Join(r.Missing, ","), "timeout") || r.UUID == "" {
				t.Errorf("round %d: hung GPU reading %+v", round, r)
			}
		}
		if round == 0 {
			after1 = runtime.NumGoroutine()
		}
	}
	if n := runtime.NumGoroutine(); n > after1 {
		t.Errorf("goroutines grew from %d to %d while the driver hung", after1, n)
	}
}

func TestShipWhileShareUnavailable(t *testing.T) {
	for _, mode := range []string{"missing", "read-only"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, 2, nil)
			e.event(record.JobStart, 9, 1)
			e.ship()
			e.cycles(30)
			undo := breakShare(t, e.incoming, mode)
			var shipErr error
			for i := 0; i < 5; i++ { // a while of outage: records pile up locally
				e.cycles(60)
				_, shipErr = e.ship()
			}
			if shipErr == nil {
				t.Fatalf("shipping to a %s share succeeded", mode)
			}
			e.event(record.JobEnd, 9, 1)
			e.ship()
			before := len(spoolNames(t, e.cfg.Spool.Dir))
			if before < 6 {
				t.Fatalf("spool holds %d files during the outage; want the records kept", before)
			}
			undo()
			e.a.Stop()
			if _, err := e.ship(); err != nil {
				t.Fatalf("shipping after the share came back: %v", err)
			}
			if left := spoolNames(t, e.cfg.Spool.Dir); len(left) != 0 {
				t.Errorf("spool keeps %v", left)
			}
			got := e.arrived()
			if n := len(got.samples); n != 2*330 {
				t.Errorf("%d samples arrived, want %d", n, 2*330)
			}
			agg := got.aggs[record.JobGPUKey(testCluster, 9, 0, testNode, sim.UUID(testNode, 1))]
			if !agg.Final || agg.Samples != 330 {
				t.Errorf("aggregate after the outage: final %v, %d samples; want final, 330", agg.Final, agg.Samples)
			}
			if len(got.events) != 2 {
				t.Errorf("%d events arrived", len(got.events))
			}
		})
	}
}

// breakShare makes the incoming directory missing or read-only; the
// returned func brings it back.
func breakShare(t *testing.T, dir, mode string) func() {
	t.Helper()
	switch mode {
	case "missing":
		moved := dir + ".away"
		if err := os.Rename(dir, moved); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.Rename(moved, dir); err != nil {
				t.Fatal(err)
			}
		}
	default:
		// a read-only bind mount: root ignores permission bits, not this
		if err := runCmd("mount", "--bind", dir, dir); err != nil {
			t.Fatalf("bind mount (tests run as root): %v", err)
		}
		if err := runCmd("mount", "-o", "remount,ro,bind", dir); err != nil {
			runCmd("umount", dir)
			t.Fatalf("remount read-only: %v", err)
		}
		undone := false
		t.Cleanup(func() {
			if !undone {
				runCmd("umount", dir)
			}
		})
		return func() {
			undone = true
			if err := runCmd("umount", dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The spool is bounded: raw samples go first, oldest first; events and
// aggregates stay.
func TestSpoolBound(t *testing.T) {
	e := newEnv(t, 8, func(c *config.Config) { c.Agent.SpoolMaxBytes = 1 << 20 })
	os.RemoveAll(e.incoming) // /data gone for the whole test
	e.event(record.JobStart, 11, 0, 1)
	e.ship()
	e.cycles(20 * 60)
	e.event(record.JobEnd, 11, 0, 1)
	e.ship()
	names := spoolNames(t, e.cfg.Spool.Dir)
	var total int64
	var segs, events, aggs []string
	for _, n := range names {
		st, _ := os.Stat(filepath.Join(e.cfg.Spool.Dir, n))
		total += st.Size()
		switch record.KindOfFile(n) {
		case record.FileSegment:
			segs = append(segs, n)
		case record.FileEvent:
			events = append(events, n)
		case record.FileJobGPU:
			aggs = append(aggs, n)
		}
	}
	if total > 1<<20 {
		t.Errorf("spool holds %d bytes, over the 1 MiB bound", total)
	}
	if len(events) != 2 || len(aggs) != 2 {
		t.Errorf("events %v and aggregates %v: want 2 each, never dropped (superseded versions compacted)", events, aggs)
	}
	if len(segs) == 0 || len(segs) >= 20 {
		t.Fatalf("%d segments kept of 20", len(segs))
	}
	last := record.SegmentFileName(testCluster, testNode, e.a.nextSeq-1)
	if segs[len(segs)-1] != last {
		t.Errorf("newest kept segment %s, want %s (oldest dropped first)", segs[len(segs)-1], last)
	}
	if v := testutilCount(t, e.a, "gpusuite_agent_dropped_segments_total"); v == 0 {
		t.Errorf("drops not counted")
	}
}

func runCmd(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return nil
}

// testutilCount scrapes the agent's registry and returns the value of the
// series written exactly as in the exposition format.
func testutilCount(t *testing.T, a *Agent, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape(t, a), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

func scrape(t testing.TB, a *Agent) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(a.Registry(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// Shipped files belong to the ingest service user: the copies are made
// with its file-system identity, so a root-owned incoming directory
// refuses them and one owned by that user takes them.
func TestShipAsServiceUser(t *testing.T) {
	e := newEnv(t, 1, func(c *config.Config) { c.Agent.ShipUser = "nobody" })
	for _, d := range []string{filepath.Dir(e.root), e.root} { // t.TempDir makes them 0700
		os.Chmod(d, 0o755)
	}
	e.event(record.JobStart, 21, 0)
	e.cycles(3)
	e.a.Stop()
	if _, err := e.ship(); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("shipping as nobody into root's 0755 directory: %v", err)
	}
	id, err := ship.LookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(e.incoming, testNode))
	if err := os.Chown(e.incoming, id.UID, id.GID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ship(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.incoming, testNode)
	entries, _ := os.ReadDir(dir)
	if len(entries) < 3 {
		t.Fatalf("%d files shipped", len(entries))
	}
	for _, p := range append([]string{dir}, func() (ps []string) {
		for _, en := range entries {
			ps = append(ps, filepath.Join(dir, en.Name()))
		}
		return
	}()...) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != id.UID {
			t.Errorf("%s owned by uid %d, want nobody (%d)", p, sys.Uid, id.UID)
		}
	}
	if left := spoolNames(t, e.cfg.Spool.Dir); len(left) != 0 {
		t.Errorf("spool keeps %v", left)
	}
}

// MIG instances are sampled as devices of their own (memory, processes),
// naming their parent GPU; what NVML does not give per instance is
// recorded as missing, and the parent keeps its power and energy.
func TestMIGInstancesSampled(t *testing.T) {
	e := newEnv(t, 1, nil)
	migs := e.sim.Device(0).EnableMIG(2)
	migs[1].SetProcs([]nvml.ProcessInfo{{Pid: 77, UsedGpuMemory: 5000 << 20}})
	e.cgroup(77, 0)
	e.cycles(2)
	e.a.Stop()
	e.ship()
	parent := sim.UUID(testNode, 0)
	byUUID := map[string]record.Sample{}
	for _, s := range e.arrived().samples {
		byUUID[s.UUID] = s
	}
	if len(byUUID) != 3 {
		t.Fatalf("sampled devices %v, want the GPU and its 2 MIG instances", byUUID)
	}
	p := byUUID[parent]
	if p.PowerMW == nil || p.EnergyMJ == nil || p.GPUUtil != nil || !strings.Contains(strings.Join(p.Missing, ","), "gpu_util: ERROR_NOT_SUPPORTED") {
		t.Errorf("parent in MIG mode: %+v", p)
	}
	m := byUUID[migs[1].UUID()]
	if m.Parent() != parent || m.MemUsedMiB == nil || *m.MemUsedMiB != 5000 || len(m.Procs) != 1 || m.Procs[0].PID != 77 {
		t.Errorf("MIG instance sample: %+v", m)
	}
	if m.PowerMW != nil || !strings.Contains(strings.Join(m.Missing, ","), "power: ERROR_NOT_SUPPORTED") {
		t.Errorf("MIG instance power: %v, missing %v", m.PowerMW, m.Missing)
	}
	if !strings.HasPrefix(m.UUID, "MIG-") {
		t.Errorf("MIG UUID %q", m.UUID)
	}
}
