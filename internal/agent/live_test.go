package agent

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// liveEnv is a node whose agent writes its live-state file into dir.
func liveEnv(t *testing.T, gpus int, dir func(root string) string) *testEnv {
	t.Helper()
	return newEnv(t, gpus, func(c *config.Config) {
		c.Agent.LiveDir = dir(filepath.Dir(c.Spool.Dir))
	})
}

// startLive runs the agent's live writer until the test ends.
func startLive(t *testing.T, a *Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.liveLoop(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitLive polls the live-state file until it holds the state sampled
// at want.
func waitLive(t *testing.T, path string, want time.Time) record.Live {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path)
		if err == nil {
			var l record.Live
			mustStrict(t, path, data, &l)
			if l.Time.Equal(want) {
				return l
			}
			last = l.Time.String()
		} else {
			last = err.Error()
		}
		time.Sleep(5 * time.Millisecond) // polling a file: no signal to wait on
	}
	t.Fatalf("live-state file never held the state of %s (last: %s)", want, last)
	return record.Live{}
}

// procUser is the name the agent gives the owner of a test process
// directory (the test's own user).
func procUser(t *testing.T) string {
	t.Helper()
	id := strconv.Itoa(os.Getuid())
	if u, err := user.LookupId(id); err == nil {
		return u.Username
	}
	return id
}

func TestLiveFile(t *testing.T) {
	e := liveEnv(t, 2, func(root string) string { return filepath.Join(root, "live") })
	if err := os.Mkdir(e.cfg.Agent.LiveDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.sim.Device(0).SetWorkload(sim.Busy(80, 4242))
	e.cgroup(4242, 100)
	started := e.event(record.JobStart, 100, 0).Time
	e.sim.Device(1).SetWorkload(sim.Busy(30, 5151))
	e.cgroup(5151, 0) // a process outside any job
	startLive(t, e.a)
	e.cycles(2)

	path := filepath.Join(e.cfg.Agent.LiveDir, testNode+".json")
	got := waitLive(t, path, e.clk.Now())
	user := procUser(t)
	want := record.Live{Schema: record.LiveSchema, Cluster: testCluster, Node: testNode, Time: e.clk.Now(), Interval: 1}
	for i, w := range []struct {
		util uint32
		jobs []record.LiveJob
		proc record.LiveProc
	}{
		{80, []record.LiveJob{{Job: 100, User: "alice", Account: "physics", Start: started}}, record.LiveProc{PID: 4242, User: user, Job: 100, MemUsedMiB: 40000}},
		{30, nil, record.LiveProc{PID: 5151, User: user, MemUsedMiB: 40000, Foreign: true}},
	} {
		load := sim.Busy(w.util, w.proc.PID)(e.clk.Now())
		minor, _ := e.sim.Device(i).GetMinorNumber()
		model, _ := e.sim.Device(i).GetName()
		mem, _ := e.sim.Device(i).GetMemoryInfo()
		total := mem.Total >> 20
		want.GPUs = append(want.GPUs, record.LiveGPU{
			Index: i, Minor: &minor, UUID: sim.UUID(testNode, i), Model: model,
			Util: &load.GPUUtil, MemUsedMiB: &load.MemUsedMiB, MemTotalMiB: &total, PowerMW: &load.PowerMW, TempC: &load.TempC,
			Jobs: w.jobs, Procs: []record.LiveProc{w.proc},
		})
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("live state (-want +got):\n%s", d)
	}

	// a change reaches the file at the next cycle
	e.sim.Device(1).SetWorkload(sim.Busy(90, 5151))
	e.cycles(1)
	got = waitLive(t, path, e.clk.Now())
	if u := got.GPUs[1].Util; u == nil || *u != 90 {
		t.Errorf("GPU 1 utilization after the change = %v, want 90", u)
	}
	names, err := os.ReadDir(e.cfg.Agent.LiveDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != testNode+".json" {
		t.Errorf("live dir holds %v, want only %s.json (no temp file left)", names, testNode)
	}
}

// TestLiveIdleSince: an allocated GPU's IdleSince is the first of the
// cycles it has been idle in since; work, the end of its job or another
// set of jobs on it starts the count again, and a GPU no job holds is
// never idle.
func TestLiveIdleSince(t *testing.T) {
	e := liveEnv(t, 2, func(root string) string { return root })
	e.cgroup(4242, 100)
	e.cgroup(4343, 101)
	e.sim.Device(1).SetWorkload(sim.Busy(0, 0)) // no job holds it
	started := e.event(record.JobStart, 100, 0).Time
	// step changes the workload of GPU 0 (nil: as it is), runs a cycle and
	// returns its snapshot
	step := func(w sim.Workload) *record.Live {
		t.Helper()
		if w != nil {
			e.sim.Device(0).SetWorkload(w)
		}
		e.cycles(1)
		return <-e.a.live.ch
	}
	at := func(d time.Duration) *time.Time { t := started.Add(d); return &t }
	busy, idle := sim.Busy(80, 4242), sim.Busy(0, 4242)
	for _, c := range []struct {
		name string
		w    sim.Workload
		// edit runs before the cycle
		edit func()
		want *time.Time
	}{
		{name: "busy", w: busy},
		{name: "goes idle", w: idle, want: at(2 * time.Second)},
		{name: "stays idle", want: at(2 * time.Second)},
		{name: "still idle", want: at(2 * time.Second)},
		{name: "one busy cycle", w: busy},
		{name: "idle again", w: idle, want: at(6 * time.Second)},
		{name: "another job joins", edit: func() { e.event(record.JobStart, 101, 0) }, want: at(7 * time.Second)},
		{name: "kept with the new set", want: at(7 * time.Second)},
		{name: "both jobs end", edit: func() { e.event(record.JobEnd, 100, 0); e.event(record.JobEnd, 101, 0) }},
	} {
		if c.edit != nil {
			c.edit()
		}
		l := step(c.w)
		if d := cmp.Diff(c.want, l.GPUs[0].IdleSince); d != "" {
			t.Errorf("%s: GPU 0 IdleSince (-want +got):\n%s", c.name, d)
		}
		if l.GPUs[1].IdleSince != nil {
			t.Errorf("%s: GPU 1, held by no job, idle since %s", c.name, l.GPUs[1].IdleSince)
		}
		for _, j := range l.GPUs[0].Jobs {
			if j.Job == 100 && !j.Start.Equal(started) {
				t.Errorf("%s: job 100 start %s, want its prolog's %s", c.name, j.Start, started)
			}
		}
	}
	if n := len(e.a.live.idle); n != 0 {
		t.Errorf("%d GPUs still marked idle with no job on the node", n)
	}
}

// TestLiveDirMissing: an unmounted /data is counted and the agent never
// creates the directory on the local disk.
func TestLiveDirMissing(t *testing.T) {
	e := liveEnv(t, 1, func(root string) string { return filepath.Join(root, "unmounted", "live") })
	startLive(t, e.a)
	e.cycles(1)
	deadline := time.Now().Add(30 * time.Second)
	for testutilCount(t, e.a, "gpusuite_agent_live_write_errors_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a failed live-state write was not counted")
		}
		time.Sleep(5 * time.Millisecond) // polling a counter: no signal to wait on
	}
	if _, err := os.Stat(filepath.Dir(e.cfg.Agent.LiveDir)); !os.IsNotExist(err) {
		t.Errorf("the agent created the live dir's parent: %v", err)
	}
	if v := testutilCount(t, e.a, "gpusuite_agent_live_write_errors_total"); v == 0 {
		t.Error("gpusuite_agent_live_write_errors_total is 0 on /metrics")
	}
}

// TestLiveHungWriter: a write that never returns (a hung /data) delays no
// cycle; the writer takes the newest snapshot once it is free again.
func TestLiveHungWriter(t *testing.T) {
	e := liveEnv(t, 2, func(root string) string { return root })
	entered := make(chan *record.Live)
	release := make(chan struct{})
	e.a.live.timeout = time.Millisecond
	e.a.live.write = func(l *record.Live) error {
		entered <- l
		<-release
		return nil
	}
	startLive(t, e.a)
	t.Cleanup(func() { close(release) }) // runs before the writer is stopped
	e.cycles(1)
	first := e.clk.Now()
	select {
	case l := <-entered:
		if !l.Time.Equal(first) {
			t.Fatalf("writer took the state of %s, want %s", l.Time, first)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the writer never took a snapshot")
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5; i++ {
			e.clk.Advance(time.Second)
			if err := e.a.Cycle(context.Background()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("cycles waited on the hung live-state writer")
	}
	if n := len(e.a.live.ch); n != 1 {
		t.Fatalf("%d snapshots wait for the writer, want 1 (the newest)", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for testutilCount(t, e.a, "gpusuite_agent_live_write_errors_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hung write was never counted as failed")
		}
		time.Sleep(time.Millisecond) // polling a counter: no signal to wait on
	}
	release <- struct{}{}
	select {
	case l := <-entered:
		if !l.Time.Equal(e.clk.Now()) {
			t.Errorf("after the hang the writer took the state of %s, want the newest %s", l.Time, e.clk.Now())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not go on after the hang")
	}
}

// TestLiveIdleSinceSurvivesRestart: a restarted agent keeps an idle GPU's
// IdleSince from its own last live file while the same job stays idle,
// and starts it again once the job works.
func TestLiveIdleSinceSurvivesRestart(t *testing.T) {
	e := liveEnv(t, 1, func(root string) string { return root })
	e.cgroup(4242, 100)
	e.event(record.JobStart, 100, 0)
	e.sim.Device(0).SetWorkload(sim.Busy(0, 4242))
	e.cycles(2)
	l := <-e.a.live.ch
	if l.GPUs[0].IdleSince == nil {
		t.Fatal("idle GPU without IdleSince before the restart")
	}
	since := *l.GPUs[0].IdleSince
	if err := e.a.live.write(l); err != nil {
		t.Fatal(err)
	}

	e.a = e.open() // a restart: a new agent on the same directories
	e.cycles(1)
	l = <-e.a.live.ch
	if l.GPUs[0].IdleSince == nil || !l.GPUs[0].IdleSince.Equal(since) {
		t.Errorf("after a restart IdleSince = %v, want %s (kept while idle)", l.GPUs[0].IdleSince, since)
	}
	e.sim.Device(0).SetWorkload(sim.Busy(80, 4242))
	e.cycles(1)
	if l = <-e.a.live.ch; l.GPUs[0].IdleSince != nil {
		t.Errorf("busy after the restart: IdleSince = %s, want none", l.GPUs[0].IdleSince)
	}
}
