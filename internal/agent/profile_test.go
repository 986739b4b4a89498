package agent

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

func ask(e *testEnv, job uint64, interval, dur time.Duration, uid uint32) agentproto.ProfileResponse {
	return e.a.startProfile(profileReq{req: agentproto.ProfileRequest{Job: job, IntervalMS: interval.Milliseconds(), ForMS: dur.Milliseconds()}, uid: uid})
}

func TestProfileRefusals(t *testing.T) {
	e := newEnv(t, 2, func(c *config.Config) { c.Agent.Interval = config.Dur(10 * time.Second) })
	ev := e.event(record.JobStart, 7, 0)
	_ = ev
	e.cycles(1)
	for _, tc := range []struct {
		name    string
		job     uint64
		iv, dur time.Duration
		uid     uint32
		want    string
	}{
		{"interval too short", 7, 50 * time.Millisecond, time.Minute, 0, "interval 50ms: use at least 100ms, in steps of 100ms"},
		{"interval off the step", 7, 150 * time.Millisecond, time.Minute, 0, "in steps of 100ms"},
		{"interval not shorter", 7, 10 * time.Second, time.Minute, 0, "not shorter than the agent's own (10s)"},
		{"too long", 7, 200 * time.Millisecond, 2 * time.Hour, 0, "duration 2h0m0s is outside 200ms..1h0m0s (agent.profile_max_duration)"},
		{"unknown job", 8, 200 * time.Millisecond, time.Minute, 0, "job 8 holds no GPU on node gpu01"},
		{"another user", 7, 200 * time.Millisecond, time.Minute, 4242, "only root or the job's owner (alice) may profile job 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ask(e, tc.job, tc.iv, tc.dur, tc.uid)
			if !strings.Contains(got.Error, tc.want) {
				t.Errorf("answer %+v, want an error containing %q", got, tc.want)
			}
		})
	}
	if got := ask(e, 7, 200*time.Millisecond, time.Minute, 0); got.Error != "" || len(got.GPUs) != 1 {
		t.Fatalf("root's profile refused: %+v", got)
	}
	// asked again before the profile started, then while it runs
	if got, want := ask(e, 7, 200*time.Millisecond, time.Minute, 0).Error, "job 7 is already being profiled (for 1m0s from the agent's next cycle)"; got != want {
		t.Errorf("second profile of a job before the first starts: %q, want %q", got, want)
	}
	e.clk.Advance(10 * time.Second) // the agent's interval here
	if err := e.a.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	end := e.clk.Now().Add(time.Minute).Format(time.RFC3339)
	if got, want := ask(e, 7, 200*time.Millisecond, time.Minute, 0).Error, "job 7 is already being profiled (until "+end+")"; got != want {
		t.Errorf("second profile of a running one: %q, want %q", got, want)
	}
}

// The owner by uid; by name where the prolog gave none.
func TestMayProfile(t *testing.T) {
	uid := int64(1000)
	for _, tc := range []struct {
		name string
		uid  uint32
		al   Alloc
		want bool
	}{
		{"root", 0, Alloc{UID: &uid}, true},
		{"owner", 1000, Alloc{UID: &uid}, true},
		{"other", 1001, Alloc{UID: &uid}, false},
		{"no uid, name of another", 1, Alloc{User: "alice"}, false},
		{"no uid, no name", 1, Alloc{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayProfile(tc.uid, &tc.al); got != tc.want {
				t.Errorf("mayProfile = %v, want %v", got, tc.want)
			}
		})
	}
}

// A profile takes its job's GPUs out of the normal cycle from the next
// cycle until its end, samples them on its own grid into a segment of its
// own, folds them into the job's aggregates, then gives them back: no
// sample of a GPU comes closer to the one before than half that one's
// interval (ingest's overlap rule), and every second is counted once.
func TestProfileSamples(t *testing.T) {
	e := newEnv(t, 3, func(c *config.Config) { c.Agent.Metrics = []string{"gpm"} })
	for i := 0; i < 3; i++ {
		e.sim.Device(i).SetWorkload(sim.Busy(60, uint32(100+i)))
		e.cgroup(uint32(100+i), 7)
	}
	e.event(record.JobStart, 7, 0, 1)
	e.cycles(2)
	resp := ask(e, 7, 200*time.Millisecond, 2*time.Second, 0)
	if resp.Error != "" {
		t.Fatal(resp.Error)
	}
	ctx := context.Background()
	start := e.clk.Now().Add(time.Second)
	if !resp.Start.Equal(start) {
		t.Errorf("profile starts %s, want the next cycle %s", resp.Start, start)
	}
	// 100 ms ticks, a cycle every second, for 4 s
	for step := 1; step <= 40; step++ {
		e.clk.Advance(100 * time.Millisecond)
		if step%10 == 0 {
			if err := e.a.Cycle(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.a.profileTick(ctx, e.clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if e.a.profiling(e.clk.Now()) {
		t.Error("profile still running after its end")
	}
	e.stopAndShip()
	if left, _ := filepath.Glob(filepath.Join(e.cfg.Agent.StateDir, profileOpenGlob)); len(left) > 0 {
		t.Errorf("open profile segments left: %v", left)
	}
	got := e.arrived()
	var prof []record.SegmentHeader
	for _, h := range got.segments {
		if h.Profile != nil {
			prof = append(prof, h)
		}
	}
	if len(prof) != 1 || prof[0].Interval != 0.2 || prof[0].Profile.Job != 7 || !prof[0].Profile.Start.Equal(start) ||
		!prof[0].Profile.End.Equal(start.Add(2*time.Second)) {
		t.Fatalf("profile segments %+v, want one of job 7 at 0.2 s from %s", prof, start)
	}
	// each GPU's samples in time order, with their interval
	ivOf := func(s record.Sample) float64 {
		if s.Time.Before(start) || !s.Time.Before(start.Add(2*time.Second)) || s.Index == 2 {
			return 1
		}
		return 0.2
	}
	byGPU := map[int][]record.Sample{}
	for _, s := range got.samples {
		byGPU[s.Index] = append(byGPU[s.Index], s)
	}
	for idx, ss := range byGPU {
		sort.Slice(ss, func(i, j int) bool { return ss[i].Time.Before(ss[j].Time) })
		short := 0
		for i := 1; i < len(ss); i++ {
			gap := ss[i].Time.Sub(ss[i-1].Time).Seconds()
			if gap < 0.5*ivOf(ss[i-1]) {
				t.Errorf("GPU %d: samples at %s and %s overlap", idx, ss[i-1].Time, ss[i].Time)
			}
			if gap < 0.3 {
				short++
			}
		}
		// ten profile samples 200 ms apart, the last 200 ms before the
		// cycle that takes the GPU back
		want := 10
		if idx == 2 {
			want = 0 // not the job's
		}
		if short != want {
			t.Errorf("GPU %d: %d gaps of 200 ms, want %d", idx, short, want)
		}
	}
	for _, s := range got.samples {
		if ivOf(s) == 0.2 && s.Time.Sub(start) > time.Duration(0) {
			if _, ok := s.Metrics["sm_active_pct"]; !ok {
				t.Errorf("profile sample %s of GPU %d has no sm_active_pct: %v (missing %v)", s.Time, s.Index, s.Metrics, s.Missing)
			}
		}
	}
	agg := got.aggs[record.JobGPUKey(testCluster, 7, 0, testNode, sim.UUID(testNode, 0))]
	var want float64
	for _, s := range byGPU[0] {
		want += ivOf(s)
	}
	if diff := agg.SampleSeconds - want; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("aggregate covers %v s, its samples %v s", agg.SampleSeconds, want)
	}
}

// The profile socket as a user meets it: gpuacct profile's client asks
// the running agent, which samples the job's GPUs at 200 ms.
func TestProfileSocket(t *testing.T) {
	r := startRunning(t)
	uid := int64(os.Getuid()) // the owner asks
	ev := &record.Event{Schema: record.EventSchema, Key: record.EventKey(testCluster, 601, 0, testNode, record.JobStart),
		Kind: record.JobStart, Time: time.Now(), Cluster: testCluster, Node: testNode,
		Job: record.Job{ID: 601, User: "alice", UID: &uid, GPUs: []int{0}}, GPUs: []record.GPU{{Minor: 0, UUID: sim.UUID(testNode, 2)}}}
	r.a.announce <- ev
	if st, err := os.Stat(r.cfg.Agent.ProfileSocket); err != nil || st.Mode().Perm() != 0o666 {
		t.Fatalf("profile socket: %v, mode %v", err, st.Mode())
	}
	var resp agentproto.ProfileResponse
	waitFor(t, "the agent to know job 601", settled, func() bool {
		var err error
		resp, err = agentproto.AskProfile(context.Background(), r.cfg.Agent.ProfileSocket, 5*time.Second,
			agentproto.ProfileRequest{Job: 601, IntervalMS: 200, ForMS: 1500})
		return err == nil
	})
	if len(resp.GPUs) != 1 || resp.GPUs[0] != sim.UUID(testNode, 2) {
		t.Fatalf("answer %+v", resp)
	}
	waitFor(t, "profile samples", settled, func() bool {
		return strings.Contains(scrape(t, r.a), "gpusuite_agent_profile_samples_total 5")
	})
}
