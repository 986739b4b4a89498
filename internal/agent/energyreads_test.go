package agent

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/hookgpus"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// With the agent up, the prolog's answer comes before any NVML call: with
// every device call held, the prolog still gets its GPUs from the agent
// (it would otherwise time out on the socket and ask hook-gpus). Once
// the calls go on, the agent reads the energy counters and the job's
// allocation starts from them, as from the prolog's own readings.
func TestHookAnswerBeforeEnergy(t *testing.T) {
	r := startRunning(t)
	nvmlOpened := 0
	deps := hook.Deps{
		Getenv: hookEnv("601", "0,1"), Now: time.Now, ProcRoot: r.cfg.Agent.ProcRoot,
		AskGPUs: hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
			nvmlOpened++
			s, _ := sim.New(sim.Options{Node: testNode, Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}})
			return gpu.OpenInterface(ctx, s, time.Second)
		}),
	}
	before := map[string]uint64{}
	for i := range 2 {
		v, _ := r.sim.Device(2 + i).GetTotalEnergyConsumption()
		before[sim.UUID(testNode, 2+i)] = v
	}
	r.sim.HangNow()
	res, err := hook.Run(context.Background(), record.JobStart, r.cfg, deps, quietLog())
	r.sim.Release()
	if err != nil {
		t.Fatal(err)
	}
	if nvmlOpened != 0 {
		t.Fatalf("prolog opened NVML: the agent did not answer while NVML was held")
	}
	for i, g := range res.Event.GPUs {
		if want := sim.UUID(testNode, 2+i); g.UUID != want || g.EnergyMJ != nil || len(g.Missing) != 0 {
			t.Errorf("GPU %d in the prolog's event: %+v, want uuid %s and no energy (the agent reads it)", i, g, want)
		}
	}
	var got []AllocGPU
	waitFor(t, "job 601's allocation with the agent's energy readings", settled, func() bool {
		for _, al := range r.a.snapshot().allocs {
			if al.Job == 601 {
				got = al.GPUs
				return len(got) == 2 && got[0].EnergyMJ != nil && got[1].EnergyMJ != nil
			}
		}
		return false
	})
	for _, g := range got {
		if *g.EnergyMJ < before[g.UUID] {
			t.Errorf("GPU %s: agent's reading %d, below the counter %d taken before the prolog ran", g.UUID, *g.EnergyMJ, before[g.UUID])
		}
	}
	if n := len(r.a.energy.m); n != 0 {
		t.Errorf("%d readings left after their event took them", n)
	}
}

// A reading no event takes is dropped after energyReadTTL, and the table
// never holds more than maxEnergyReads.
func TestEnergyReadsBounded(t *testing.T) {
	var r energyReads
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for i := range maxEnergyReads {
		if r.start(string(rune('a'+i%26))+time.Duration(i).String(), t0) == nil {
			t.Fatalf("reading %d refused below the bound", i)
		}
	}
	if r.start("one more", t0) != nil {
		t.Errorf("a reading past %d taken", maxEnergyReads)
	}
	if r.start("later", t0.Add(energyReadTTL+time.Second)) == nil || len(r.m) != 1 {
		t.Errorf("old readings not dropped: %d left", len(r.m))
	}
	if r.start("later", t0.Add(energyReadTTL+time.Second)) != nil {
		t.Errorf("a second reading under one key")
	}
	e := r.m["later"]
	e.mj["GPU-x"] = 7
	close(e.done)
	if got, found := r.take("later", time.Second); got["GPU-x"] != 7 || !found {
		t.Errorf("take: %v (found %v)", got, found)
	}
	if got, found := r.take("later", time.Second); got != nil || found {
		t.Errorf("taken twice: %v (found %v)", got, found)
	}
}

// An event that comes for no registered reading (its hook's identify line
// not yet handled when a spool scan took it) gets its GPUs' counters read
// by the agent then, if it is recent; an old one is left without.
func TestEventEnergyReadLate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		age      time.Duration
		wantRead bool
	}{
		{name: "recent", age: time.Second, wantRead: true},
		{name: "old", age: time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2, nil)
			e.cycles(1)
			before := e.energy(1)
			ev := &record.Event{Schema: record.EventSchema, Kind: record.JobStart, Time: e.clk.Now().Add(-tt.age),
				Key:  record.EventKey(testCluster, 77, 0, testNode, record.JobStart),
				GPUs: []record.GPU{{Minor: 1, UUID: sim.UUID(testNode, 1)}}}
			e.a.eventEnergy(ev)
			got := ev.GPUs[0].EnergyMJ
			if tt.wantRead != (got != nil) || got != nil && *got < before {
				t.Errorf("energy %v (counter before %d), want read: %v", got, before, tt.wantRead)
			}
		})
	}
}
