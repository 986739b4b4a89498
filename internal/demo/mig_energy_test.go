package demo

import (
	"math"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestMIGSliceJobEnergy: an A100 cut into a 3g.40gb and a 4g.40gb slice,
// a job on each and a job on a whole second A100, under the real agent
// and the real ingest. Each slice job's ledger energy (the job's total,
// which team and node reports sum) is its share (3/7, 4/7) of its
// parent's: the two sum to the parent's energy over their sampled time,
// and the node's energy is the whole GPU's job's and that, the parent's
// counted once. Before, slice jobs had 0.
func TestMIGSliceJobEnergy(t *testing.T) {
	const parentMW, wholeMW = 210_000, 120_000
	var migs []*sim.MIGDevice
	n := newSimNode(t, "a100", func(srv *sim.Server) {
		migs = srv.Device(1).EnableMIGLayout([]string{"3g.40gb", "4g.40gb"})
		srv.Device(1).SetLoad(sim.Load{PowerMW: parentMW, TempC: 45, SMClockMHz: 1400})
	})
	ctx, srv := n.ctx, n.srv
	// job 41: the whole GPU 0; jobs 42 and 43: the slices of GPU 1
	n.cgroup(141, 41)
	srv.Device(0).SetLoad(sim.Load{GPUUtil: 50, MemUsedMiB: 6000, PowerMW: wholeMW, TempC: 40, SMClockMHz: 1400,
		Procs: []nvml.ProcessInfo{{Pid: 141, UsedGpuMemory: 6000 << 20}}})
	for i, job := range []uint64{42, 43} {
		pid := uint32(100 + job)
		n.cgroup(pid, job)
		migs[i].SetProcs([]nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 2 << 30}})
	}
	idx0, idx1, ci := 0, 1, 0
	gpus := map[uint64]record.GPU{41: {Minor: 0, Index: &idx0, UUID: sim.UUID("gpu01", 0)}}
	for i, p := range []string{"3g.40gb", "4g.40gb"} {
		gi := i + 1
		gpus[uint64(42+i)] = record.GPU{Minor: 1, Index: &idx1, UUID: migs[i].UUID(), Parent: sim.UUID("gpu01", 1), Profile: p, GI: &gi, CI: &ci}
	}
	n.cycle()
	start := n.clk.Now()
	for _, job := range []uint64{41, 42, 43} {
		n.event(record.JobStart, job, gpus[job])
	}
	for range 21 {
		n.cycle()
	}
	n.clk.Advance(500 * time.Millisecond)
	for _, job := range []uint64{41, 42, 43} {
		n.event(record.JobEnd, job, gpus[job])
	}
	n.cycle()
	n.stopAndShip()

	st, _ := n.ingest(start.Add(-time.Hour))
	defer st.Close()

	jobs := map[int64]store.Usage{}
	from, to := start.Add(-time.Hour).Unix(), n.clk.Now().Add(time.Hour).Unix()
	n.step("jobs", func() error {
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
	n.step("facts", func() error {
		return st.Facts(ctx, store.FactQuery{Grain: store.Daily, From: from - from%86400, To: to - to%86400 + 86400},
			func(r *store.FactRow) { node += r.EnergyMJ })
	})
	if node != w.EnergyMJ+s3.EnergyMJ+s4.EnergyMJ {
		t.Errorf("the node's energy: %d mJ, want its jobs' %d + %d + %d", node, w.EnergyMJ, s3.EnergyMJ, s4.EnergyMJ)
	}
}
