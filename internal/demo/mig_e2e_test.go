package demo

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/sim"
)

// TestMIGSlicesEndToEnd: on an A100 node whose second GPU is cut into
// seven 1g.10gb slices, two jobs on two slices and a job on the whole
// first GPU run under the real agent; the real ingest takes everything.
// Each slice job has its own instance's samples and memory, and a 1/7
// share of the parent's energy (so the seven shares would sum to the
// parent's); the whole-GPU job, small in memory and utilization, is
// told in `gpuacct job` the slice it would fit.
func TestMIGSlicesEndToEnd(t *testing.T) {
	var migs []*sim.MIGDevice
	n := newSimNode(t, "a100", func(srv *sim.Server) {
		migs = srv.Device(1).EnableMIGLayout(sim.LayoutA100x7)
		srv.Device(1).SetLoad(sim.Load{PowerMW: 210_000, TempC: 45, SMClockMHz: 1400})
	})
	ctx, clk, srv, so := n.ctx, n.clk, n.srv, n.so
	// job 31: the whole GPU 0 at 10 %, 6 000 MiB; jobs 32 and 33: slices
	// 0 and 1 of GPU 1, 2 and 5 GiB
	n.cgroup(131, 31)
	srv.Device(0).SetLoad(sim.Load{GPUUtil: 10, MemUtil: 5, MemUsedMiB: 6000, PowerMW: 120_000, TempC: 40, SMClockMHz: 1400,
		Procs: []nvml.ProcessInfo{{Pid: 131, UsedGpuMemory: 6000 << 20}}})
	for i, job := range []uint64{32, 33} {
		pid := uint32(100 + job)
		n.cgroup(pid, job)
		migs[i].SetProcs([]nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: uint64(2+3*i) << 30}})
	}
	idx0, idx1, ci := 0, 1, 0
	whole := func() record.GPU {
		e, _ := srv.Device(0).GetTotalEnergyConsumption()
		return record.GPU{Minor: 0, Index: &idx0, UUID: sim.UUID("gpu01", 0), EnergyMJ: &e}
	}
	slice := func(i int) record.GPU {
		gi := i + 1
		return record.GPU{Minor: 1, Index: &idx1, UUID: migs[i].UUID(), Parent: sim.UUID("gpu01", 1), Profile: "1g.10gb", GI: &gi, CI: &ci}
	}
	parentEnergy := func() uint64 {
		e, r := srv.Device(1).GetTotalEnergyConsumption()
		if r != nvml.SUCCESS {
			t.Fatal(r)
		}
		return e
	}
	n.cycle()
	start := clk.Now()
	n.event(record.JobStart, 31, whole())
	n.event(record.JobStart, 32, slice(0))
	n.event(record.JobStart, 33, slice(1))
	n.cycle()
	first := parentEnergy() // the slices' aggregates start from this cycle's reading
	for range 20 {
		n.cycle()
	}
	last := parentEnergy()
	clk.Advance(500 * time.Millisecond)
	n.event(record.JobEnd, 31, whole())
	n.event(record.JobEnd, 32, slice(0))
	n.event(record.JobEnd, 33, slice(1))
	n.cycle()
	n.stopAndShip()

	st, ledger := n.ingest(start.Add(-time.Hour))
	st.Close()

	led, err := report.OpenDB(ctx, ledger, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	detail := func(job string) *report.Detail {
		t.Helper()
		sp, err := report.ParseJobSpec(job)
		if err != nil {
			t.Fatal(err)
		}
		det, err := led.Job(ctx, so.Cluster, sp, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		return det
	}
	parentMJ := float64(last - first)
	var sum float64
	for i, job := range []string{"32", "33"} {
		det := detail(job)
		if len(det.GPUs) != 1 || det.GPUs[0].UUID != migs[i].UUID() {
			t.Fatalf("job %s's GPUs: %+v; want its slice %s alone", job, det.GPUs, migs[i].UUID())
		}
		g := det.GPUs[0]
		if g.SampleS < 20 || g.MemMaxMiB == nil || *g.MemMaxMiB != float64((2+3*i)<<10) {
			t.Errorf("job %s: %v s sampled, memory peak %v MiB; want its own instance's %d MiB", job, g.SampleS, g.MemMaxMiB, (2+3*i)<<10)
		}
		if g.EnergyKWh == nil {
			t.Fatalf("job %s: no energy", job)
		}
		mj := *g.EnergyKWh * 3.6e9
		if math.Abs(mj-parentMJ/7) > 2 {
			t.Errorf("job %s: %.0f mJ, want 1/7 of the parent's %.0f", job, mj, parentMJ)
		}
		sum += mj
	}
	if math.Abs(sum-parentMJ*2/7) > 4 {
		t.Errorf("the two slices' energy %.0f mJ, want 2/7 of the parent's %.0f", sum, parentMJ)
	}
	var b strings.Builder
	if err := report.WriteJobText(&b, detail("31"), &teams.Mapping{}, time.UTC, 100); err != nil {
		t.Fatal(err)
	}
	const want = "GPU 0 on gpu01 peaked at 5.9 GiB of memory and 10% utilization: a MIG slice 1g.10gb would do (--gres=gpu:1g.10gb:1)."
	if !strings.Contains(b.String(), want) {
		t.Errorf("gpuacct job 31 lacks %q:\n%s", want, b.String())
	}
}
