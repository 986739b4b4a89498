package agent

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/spool"
)

func TestSliceCount(t *testing.T) {
	tests := []struct {
		model string
		want  int
	}{
		{"NVIDIA A100-SXM4-80GB MIG 1g.10gb", 1},
		{"NVIDIA H100 80GB HBM3 MIG 3g.40gb", 3},
		{"NVIDIA A100-SXM4-40GB MIG 7g.40gb", 7},
		{"NVIDIA H100 80GB HBM3 MIG 1g.10gb+me", 1},
		{"NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb", 1}, // a compute instance of a 3g
		{"NVIDIA A100-SXM4-80GB", 0},
		{"NVIDIA A100-SXM4-80GB MIG", 0},
		{"NVIDIA A100-SXM4-80GB MIG xg.10gb", 0},
		{"NVIDIA A100-SXM4-80GB MIG 99g.10gb", 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			if got := sliceCount(tt.model); got != tt.want {
				t.Errorf("sliceCount(%q) = %d, want %d", tt.model, got, tt.want)
			}
		})
	}
}

// The parent's energy is shared by profile slice count among the
// instances that exist, and one parent's shares sum to 1.
func TestParentShares(t *testing.T) {
	mig := func(uuid, parent, prof string) migInstance {
		return migInstance{uuid: uuid, parent: parent, model: "NVIDIA H100 80GB HBM3 MIG " + prof}
	}
	tests := []struct {
		name string
		ins  []migInstance
		want map[string]float64
	}{
		{"seven 1g", []migInstance{mig("a", "P", "1g.10gb"), mig("b", "P", "1g.10gb"), mig("c", "P", "1g.10gb"),
			mig("d", "P", "1g.10gb"), mig("e", "P", "1g.10gb"), mig("f", "P", "1g.10gb"), mig("g", "P", "1g.10gb")},
			map[string]float64{"a": 1.0 / 7, "b": 1.0 / 7, "c": 1.0 / 7, "d": 1.0 / 7, "e": 1.0 / 7, "f": 1.0 / 7, "g": 1.0 / 7}},
		{"H100 mix", []migInstance{mig("a", "P", "3g.40gb"), mig("b", "P", "2g.20gb"), mig("c", "P", "1g.10gb"), mig("d", "P", "1g.10gb")},
			map[string]float64{"a": 3.0 / 7, "b": 2.0 / 7, "c": 1.0 / 7, "d": 1.0 / 7}},
		{"part of the GPU cut: the instances share it all", []migInstance{mig("a", "P", "3g.40gb"), mig("b", "P", "1g.10gb")},
			map[string]float64{"a": 0.75, "b": 0.25}},
		{"a profile unread: equal shares", []migInstance{mig("a", "P", "3g.40gb"), {uuid: "b", parent: "P", model: "odd"}},
			map[string]float64{"a": 0.5, "b": 0.5}},
		{"two parents apart", []migInstance{mig("a", "P", "3g.40gb"), mig("b", "Q", "1g.10gb"), mig("c", "Q", "2g.20gb")},
			map[string]float64{"a": 1, "b": 1.0 / 3, "c": 2.0 / 3}},
		{"whole GPUs have none", []migInstance{{uuid: "GPU-1", model: "NVIDIA H100 80GB HBM3"}}, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parentShares(tt.ins)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("shares (-want +got):\n%s", d)
			}
			sums := map[string]float64{}
			for _, m := range tt.ins {
				if m.parent != "" {
					sums[m.parent] += got[m.uuid]
				}
			}
			for p, s := range sums {
				if math.Abs(s-1) > 1e-12 {
					t.Errorf("parent %s: shares sum to %v", p, s)
				}
			}
		})
	}
}

// migEvent spools a job start on MIG instance i of GPU 0 as the prolog
// records a slice: the parent's minor, its UUID, the instance's ids and,
// when uuid is set, the instance's UUID; no energy (NVML has none).
func (e *testEnv) migEvent(job uint64, migs []*sim.MIGDevice, i int, gi int, uuid bool) {
	e.t.Helper()
	ev := &record.Event{
		Schema: record.EventSchema, Kind: record.JobStart, Time: e.clk.Now(), Source: "prolog",
		Cluster: testCluster, Node: testNode, Job: record.Job{ID: job, User: "alice", Account: "physics", Partition: "gpu"},
	}
	ev.Key = record.EventKey(testCluster, job, 0, testNode, record.JobStart)
	idx, ci := 0, 0
	g := record.GPU{Minor: 0, Index: &idx, Parent: sim.UUID(testNode, 0), Profile: "x", GI: &gi, CI: &ci}
	if uuid {
		g.UUID = migs[i].UUID()
	}
	ev.GPUs = append(ev.GPUs, g)
	data, _ := json.Marshal(ev)
	if err := (spool.Dir{Path: e.cfg.Spool.Dir}).Write(record.EventFileName(testCluster, job, 0, testNode, record.JobStart), data); err != nil {
		e.t.Fatal(err)
	}
}

// Jobs on slices of one GPU get the samples of their own instance, never
// the parent's, and energy shares that sum to the parent's energy.
func TestMIGJobsGetTheirInstanceAndShareEnergy(t *testing.T) {
	e := newEnvModel(t, 1, "h100", nil)
	migs := e.sim.Device(0).EnableMIGLayout(sim.LayoutH100Mix) // 3g, 2g, 1g, 1g
	e.sim.Device(0).SetLoad(sim.Load{PowerMW: 350_000, TempC: 50, SMClockMHz: 1500})
	for i, m := range migs {
		pid := uint32(100 + i)
		e.cgroup(pid, uint64(11+i))
		m.SetProcs([]nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: uint64(i+1) << 30}})
	}
	for i := range migs {
		e.migEvent(uint64(11+i), migs, i, i+1, i != 1) // job 12's slice is found by its ids
	}
	e.cycles(6)
	e.stopAndShip()
	got := e.arrived()
	parent := sim.UUID(testNode, 0)
	var first, last *uint64
	jobs := map[string][]uint64{}
	for _, s := range got.samples {
		if s.UUID == parent {
			if len(s.Jobs) != 0 {
				t.Errorf("the parent's sample went to jobs %+v", s.Jobs)
			}
			if first == nil {
				first = s.EnergyMJ
			}
			last = s.EnergyMJ
			continue
		}
		if s.Parent() != parent || s.ParentShare() == 0 {
			t.Errorf("instance sample %s: parent %q share %v", s.UUID, s.Parent(), s.ParentShare())
		}
		for _, j := range s.Jobs {
			jobs[s.UUID] = append(jobs[s.UUID], j.Job)
		}
	}
	for i, m := range migs {
		if js := jobs[m.UUID()]; len(js) != 6 || js[0] != uint64(11+i) || js[5] != uint64(11+i) {
			t.Errorf("instance %d: samples of jobs %v, want six of job %d", i, js, 11+i)
		}
	}
	if first == nil || last == nil || *last <= *first {
		t.Fatalf("parent energy %v .. %v", first, last)
	}
	parentMJ := *last - *first
	var sum uint64
	for i, m := range migs {
		a, ok := got.aggs[record.JobGPUKey(testCluster, uint64(11+i), 0, testNode, m.UUID())]
		if !ok {
			t.Fatalf("no aggregate of job %d on its instance", 11+i)
		}
		want := float64(parentMJ) * float64(sliceCount(a.Model)) / 7
		if math.Abs(float64(a.EnergyMJ)-want) > 1 {
			t.Errorf("job %d (%s): energy %d mJ, want %.0f (its slices of %d)", 11+i, a.Model, a.EnergyMJ, want, parentMJ)
		}
		if a.MemMaxMiB != uint64(i+1)<<10 {
			t.Errorf("job %d: memory peak %d MiB, want its instance's %d", 11+i, a.MemMaxMiB, (i+1)<<10)
		}
		sum += a.EnergyMJ
	}
	if d := int64(sum) - int64(parentMJ); d < -4 || d > 4 {
		t.Errorf("instances' energy sums to %d mJ, the parent's is %d", sum, parentMJ)
	}
	for k := range got.aggs {
		if got.aggs[k].UUID == parent {
			t.Errorf("an aggregate on the parent: %s", k)
		}
	}
}

// A slice the hook could not name by UUID is found by its instance ids;
// one not found is not attributed at all, and never to the parent that
// shares its minor.
func TestMIGSliceWithoutUUIDIsNotTheParent(t *testing.T) {
	e := newEnvModel(t, 1, "h100", nil)
	migs := e.sim.Device(0).EnableMIGLayout(sim.LayoutH100Mix)
	e.cycles(1)
	e.migEvent(21, migs, 2, 3, false)
	e.migEvent(22, migs, 0, 6, false) // no instance gi6
	e.cycles(1)
	want := map[uint64][]string{21: {migs[2].UUID()}, 22: nil}
	got := map[uint64][]string{}
	for _, al := range e.a.allocs {
		var u []string
		for _, g := range al.GPUs {
			u = append(u, g.UUID)
		}
		got[al.Job] = u
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("allocated UUIDs (-want +got):\n%s", d)
	}
}

// On a GPU with GPM, a MIG instance's SM activity is read through its
// GPU per GPU instance and is the instance's utilization: its job's used
// time and idle are its own.
func TestMIGActivityFromGPM(t *testing.T) {
	e := newEnvModel(t, 1, "h100", func(c *config.Config) { c.Agent.Metrics = []string{"gpm"} })
	migs := e.sim.Device(0).EnableMIGLayout(sim.LayoutH100Mix)
	migs[0].SetActivity(sim.Profile{SMActivePct: 40, TensorPct: 25})
	migs[1].SetActivity(sim.Profile{SMActivePct: 0})
	for i, m := range migs[:2] {
		pid := uint32(200 + i)
		e.cgroup(pid, uint64(41+i))
		m.SetProcs([]nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 1 << 30}})
		e.migEvent(uint64(41+i), migs, i, i+1, true)
	}
	e.cycles(4)
	e.stopAndShip()
	got := e.arrived()
	type seen struct {
		util        *uint32
		tensor      float64
		idle        bool
		utilMissing bool
	}
	last := map[string]seen{}
	for _, s := range got.samples {
		if s.Parent() == "" || len(s.Jobs) == 0 {
			continue
		}
		miss := false
		for _, m := range s.Missing {
			miss = miss || strings.HasPrefix(m, "gpu_util:")
		}
		last[s.UUID] = seen{s.GPUUtil, s.Metrics["tensor_active_pct"], s.Jobs[0].Idle, miss}
	}
	u := func(v uint32) *uint32 { return &v }
	want := map[string]seen{
		migs[0].UUID(): {u(40), 25, false, false},
		migs[1].UUID(): {u(0), 0, true, false},
	}
	if d := cmp.Diff(want, last, cmp.AllowUnexported(seen{})); d != "" {
		t.Errorf("the instances' last samples (-want +got):\n%s", d)
	}
	a := got.aggs[record.JobGPUKey(testCluster, 41, 0, testNode, migs[0].UUID())]
	if a.UtilMax != 40 || a.UtilSeconds <= 0 {
		t.Errorf("job 41's aggregate: util max %d, util %v s; want its instance's 40 %%", a.UtilMax, a.UtilSeconds)
	}
	for _, h := range got.segments {
		for uuid, u := range h.Unsupported {
			for _, n := range u {
				if strings.HasPrefix(n, "sm_active_pct") {
					t.Errorf("segment header: %s cannot give %s", uuid, n)
				}
			}
		}
	}
}
