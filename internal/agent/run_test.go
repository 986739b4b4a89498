package agent

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/hookgpus"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

type fakeNotifier struct {
	mu     sync.Mutex
	states []string
	wd     time.Duration
}

func (f *fakeNotifier) Notify(s string)                 { f.mu.Lock(); f.states = append(f.states, s); f.mu.Unlock() }
func (f *fakeNotifier) WatchdogInterval() time.Duration { return f.wd }
func (f *fakeNotifier) has(s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.states {
		if v == s {
			return true
		}
	}
	return false
}

// settled is how long tests wait for what must happen: long enough for a
// busy machine, since a passing test returns as soon as it happens.
const settled = 60 * time.Second

// waitFor polls ok every 20 ms until it holds, failing after d.
func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	poll.True(t, what, d, 20*time.Millisecond, ok)
}

// runningAgent runs a real-time agent on simulated GPUs until the test ends.
type runningAgent struct {
	a      *Agent
	sim    *sim.Server
	cfg    config.Config
	notify *fakeNotifier
	stop   func() error
}

func startRunning(t *testing.T) *runningAgent {
	t.Helper()
	return startRunningWith(t, testConfig(t.TempDir()))
}

// startRunningWith runs the agent on cfg (testConfig's, changed).
func startRunningWith(t *testing.T, cfg config.Config) *runningAgent {
	t.Helper()
	for _, d := range []string{cfg.Agent.IncomingDir, cfg.Agent.ProcRoot} {
		os.MkdirAll(d, 0o755)
	}
	s, err := sim.New(sim.Options{Node: testNode, Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	lib, err := gpu.OpenInterface(context.Background(), s, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, testCluster, testNode, Deps{Lib: lib, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNotifier{wd: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, cfg.Agent.SocketPath(cfg.Spool.Dir), cfg.Agent.MetricsListen, n) }()
	r := &runningAgent{a: a, sim: s, cfg: cfg, notify: n}
	stopped := false
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { r.stop() })
	waitFor(t, "READY=1", settled, func() bool { return n.has("READY=1") })
	return r
}

func hookEnv(job string, gpus string) func(string) string {
	env := map[string]string{
		"SLURM_JOB_ID": job, "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1000", "SLURM_JOB_ACCOUNT": "physics",
		"SLURMD_NODENAME": testNode, "SLURM_CLUSTER_NAME": testCluster, "SLURM_JOB_GPUS": gpus,
		"SLURM_JOB_PARTITION": "gpu",
	}
	return func(k string) string { return env[k] }
}

// With the agent up, the prolog gets UUIDs from its socket (the agent
// reads the energy counters after answering) and never initialises NVML; the agent learns the job at once. With the agent
// down, the prolog falls back to NVML.
func TestHookSocket(t *testing.T) {
	r := startRunning(t)
	hcfg := r.cfg
	hcfg.Hooks.HealthCheck = true
	nvmlOpened := 0
	deps := hook.Deps{
		Getenv: hookEnv("501", "0,1"), Now: time.Now, ProcRoot: r.cfg.Agent.ProcRoot,
		AskGPUs: hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
			nvmlOpened++
			s, _ := sim.New(sim.Options{Node: testNode, Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}})
			return gpu.OpenInterface(ctx, s, time.Second)
		}),
	}
	res, err := hook.Run(context.Background(), record.JobStart, hcfg, deps, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if nvmlOpened != 0 {
		t.Errorf("prolog opened NVML although the agent is up")
	}
	// minors 0,1 are NVML indices 2,3 on this node
	for i, g := range res.Event.GPUs {
		// no energy: the agent reads it after answering (energyreads.go)
		if want := sim.UUID(testNode, 2+i); g.UUID != want || g.EnergyMJ != nil || g.Index == nil || *g.Index != 2+i {
			t.Errorf("GPU %d from the agent: %+v, want uuid %s", i, g, want)
		}
	}
	if len(res.Event.Quality) != 0 || res.Unhealthy != "" {
		t.Errorf("quality %v, unhealthy %q", res.Event.Quality, res.Unhealthy)
	}
	waitFor(t, "job_info of the announced job", settled, func() bool {
		return strings.Contains(scrape(t, r.a), `job="501"`)
	})

	// health check through the socket: a stray process on minor 1 (index 3)
	r.sim.Device(3).SetWorkload(sim.Busy(50, 4242))
	deps.Getenv = hookEnv("502", "1")
	res, err = hook.Run(context.Background(), record.JobStart, hcfg, deps, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Unhealthy, "pid 4242") || nvmlOpened != 0 {
		t.Errorf("health check via the agent: %q (NVML opened %d times)", res.Unhealthy, nvmlOpened)
	}

	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if !r.notify.has("STOPPING=1") {
		t.Errorf("no STOPPING=1: %v", r.notify.states)
	}
	if _, err := os.Stat(r.cfg.Agent.SocketPath(r.cfg.Spool.Dir)); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	deps.Getenv = hookEnv("503", "0")
	res, err = hook.Run(context.Background(), record.JobEnd, hcfg, deps, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if nvmlOpened != 1 || res.Event.GPUs[0].UUID != sim.UUID(testNode, 2) {
		t.Errorf("agent down: NVML opened %d times, GPU %+v", nvmlOpened, res.Event.GPUs[0])
	}
}

func TestSocketIsRootOnlyAndSingle(t *testing.T) {
	r := startRunning(t)
	p := r.cfg.Agent.SocketPath(r.cfg.Spool.Dir)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, want a 0600 socket", st.Mode())
	}
	if _, err := listenSocket(p); err == nil || !strings.Contains(err.Error(), "another running agent") {
		t.Errorf("second agent on the socket: %v", err)
	}
	// garbage and unknown requests get one error line, not a hang
	for _, req := range []string{"not json\n", `{"op":"format_disk"}` + "\n"} {
		c, err := net.Dial("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(settled))
		c.Write([]byte(req))
		buf := make([]byte, 512)
		n, _ := c.Read(buf)
		c.Close()
		if !strings.Contains(string(buf[:n]), `"error"`) {
			t.Errorf("request %q answered %q", req, buf[:n])
		}
	}
	// a stale socket file of a dead agent is replaced
	r.stop()
	l, _ := net.Listen("unix", p)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	ln, err := listenSocket(p)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln.Close()
}

func TestWatchdogPings(t *testing.T) {
	r := startRunning(t)
	waitFor(t, "WATCHDOG=1", settled, func() bool { return r.notify.has("WATCHDOG=1") })
}

// The real binary speaks systemd's notify protocol on $NOTIFY_SOCKET.
func TestSystemdNotify(t *testing.T) {
	bin := agentBinary(t)
	root := t.TempDir()
	cfg := writeAgentConfig(t, root, "")
	sockPath := filepath.Join(root, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	cmd, out := startAgent(t, bin, cfg, "NOTIFY_SOCKET="+sockPath, "WATCHDOG_USEC=400000")
	want := []string{"READY=1", "WATCHDOG=1"}
	deadline := time.After(settled)
	for len(want) > 0 {
		select {
		case s := <-got:
			if s == want[0] {
				want = want[1:]
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no %v from the agent; log:\n%s", want, out)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for stopping := false; !stopping; {
		select {
		case s := <-got:
			stopping = s == "STOPPING=1"
		case <-time.After(settled):
			t.Fatalf("no STOPPING=1; log:\n%s", out)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, out)
	}
}

// Bad input: one clear line and a non-zero exit.
func TestCommandErrors(t *testing.T) {
	bin := agentBinary(t)
	nvmlPresent := exec.Command("sh", "-c", "ldconfig -p | grep -q libnvidia-ml.so.1").Run() == nil
	tests := []struct {
		name   string
		config string // [agent] extras, or a whole file when it starts with "!"
		args   []string
		want   string
	}{
		{name: "interval below minimum", args: []string{"--interval", "500ms"}, want: `--interval: 500ms is below the 1s minimum`},
		{name: "bad interval", args: []string{"--interval", "often"}, want: `invalid value "often" for flag -interval`},
		{name: "unknown key", config: "colour = \"blue\"", want: `unknown key "agent.colour"`},
		{name: "relative incoming", args: []string{"--incoming-dir", "data/in"}, want: `--incoming-dir: "data/in" is not an absolute path`},
		{name: "bad log level", args: []string{"--log-level", "loud"}, want: `--log-level: "loud" is not debug`},
		{name: "segment shorter than interval", config: "!interval", want: `key "agent.segment_duration"`},
		{name: "spool others can write", args: []string{"--spool-dir", "WORLD"}, want: "is writable by group or others"},
		{name: "unknown ship user", config: `ship_user = "no-such-user-x"`, want: `key "agent.ship_user": user: unknown user no-such-user-x`},
		{name: "no driver and no simulation", config: "!nvml", want: "open NVML: nvmlInit: ERROR_LIBRARY_NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			extra := tt.config
			if strings.HasPrefix(extra, "!") {
				extra = ""
			}
			cfg := writeAgentConfig(t, root, extra)
			if tt.config == "!interval" {
				data, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, []byte(strings.Replace(string(data), `interval = "1s"`, `interval = "10s"`, 1)), 0o600)
			}
			if tt.config == "!nvml" {
				data, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, []byte(strings.Replace(string(data), `backend = "simulated"`, `backend = "nvml"`, 1)), 0o600)
				if nvmlPresent {
					tt.want = "" // a real driver: the agent must start; checked below
				}
			}
			args := append([]string{"--config", cfg, "agent"}, tt.args...)
			for i, a := range args {
				if a == "WORLD" {
					w := filepath.Join(root, "world")
					os.Mkdir(w, 0o777)
					os.Chmod(w, 0o777)
					args[i] = w
				}
			}
			cmd := exec.Command(bin, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cmd.Start()
			timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Signal(syscall.SIGTERM) })
			err := cmd.Wait()
			timer.Stop()
			if tt.want == "" {
				if strings.Contains(stderr.String(), "open NVML") {
					t.Errorf("real NVML present but the agent failed: %s", stderr.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("exit 0, want failure; stderr %q", stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "gpuacct: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q: want one line containing %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.sim.Device(0).SetWorkload(sim.Busy(80, 1000))
	e.cgroup(1000, 42)
	e.event(record.JobStart, 42, 0)
	e.cycles(3)
	e.sim.Device(1).Lose()
	e.cycles(1)
	text := scrape(t, e.a)
	u0, u1 := sim.UUID(testNode, 0), sim.UUID(testNode, 1)
	lbl := func(i int, u string) string {
		return `{gpu="` + itoa(uint64(i)) + `",model="NVIDIA H100 80GB HBM3",node="gpu01",uuid="` + u + `"}`
	}
	for _, want := range []string{
		"gpusuite_gpu_utilization_percent" + lbl(0, u0) + " 80",
		"gpusuite_gpu_power_watts" + lbl(0, u0) + " 470",
		"gpusuite_gpu_up" + lbl(0, u0) + " 1",
		"gpusuite_gpu_up" + lbl(1, u1) + " 0",
		"gpusuite_gpu_allocated_idle" + lbl(0, u0) + " 0",
		`gpusuite_gpu_job_info{account="physics",gpu="0",job="42",node="gpu01",partition="gpu",restart="0",user="alice",uuid="` + u0 + `"} 1`,
		"gpusuite_agent_samples_total 8",
		`gpusuite_agent_nvml_errors_total{code="ERROR_GPU_IS_LOST"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if strings.Contains(text, "gpusuite_gpu_utilization_percent"+lbl(1, u1)) {
		t.Errorf("a lost GPU's utilization is exported (missing must not be 0)")
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "gpusuite_gpu_") && !strings.HasPrefix(l, "gpusuite_gpu_job_info") && strings.Contains(l, "job=") {
			t.Errorf("job label on a per-GPU series: %s", l)
		}
	}
}

var _ = nvml.SUCCESS

// An agent that accepts but never answers costs the hook at most
// agent.socket_timeout; the hook then asks NVML and records in full.
func TestHookFallsBackWhenAgentHangs(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.Agent.SocketTimeout = config.Dur(200 * time.Millisecond)
	os.MkdirAll(cfg.Spool.Dir, 0o700)
	ln, err := net.Listen("unix", cfg.Agent.SocketPath(cfg.Spool.Dir))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	// the hung agent's inventory, last marked long ago: its loop is stuck,
	// so the hook does not take it, asks, and falls back
	inv, _ := json.Marshal(agentproto.Inventory{PID: os.Getpid(), GPUs: []record.GPU{{Minor: 0, UUID: "GPU-stale"}}})
	ip := agentproto.InventoryPath(cfg.Agent.SocketPath(cfg.Spool.Dir))
	if err := os.WriteFile(ip, inv, 0o600); err != nil {
		t.Fatal(err)
	}
	stale := time.Now().Add(-time.Hour)
	if err := os.Chtimes(ip, stale, stale); err != nil {
		t.Fatal(err)
	}
	opened := 0
	deps := hook.Deps{
		Getenv: hookEnv("601", "0"), Now: time.Now,
		AskGPUs: hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
			opened++
			s, _ := sim.New(sim.Options{Node: testNode, Count: 1, Model: "h100"})
			return gpu.OpenInterface(ctx, s, time.Second)
		}),
	}
	start := time.Now()
	res, err := hook.Run(context.Background(), record.JobStart, cfg, deps, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	// one bounded identify and one bounded announce
	if el := time.Since(start); el > 1200*time.Millisecond { // hooks.timeout is 2s
		t.Errorf("prolog took %s with a hung agent; the bound is 2 × 200ms", el)
	}
	if opened != 1 || res.Event.GPUs[0].UUID != sim.UUID(testNode, 0) || len(res.Event.Quality) != 0 {
		t.Errorf("fallback: NVML opened %d times, event %+v", opened, res.Event)
	}
}

// The running agent publishes its GPUs' identities beside the socket for
// the hooks (agentproto.Expect), with its pid, and takes them away when it
// stops.
func TestInventoryPublished(t *testing.T) {
	r := startRunning(t)
	p := agentproto.InventoryPath(r.cfg.Agent.SocketPath(r.cfg.Spool.Dir))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var inv agentproto.Inventory
	if err := json.Unmarshal(data, &inv); err != nil {
		t.Fatal(err)
	}
	if inv.PID != os.Getpid() || len(inv.GPUs) != 4 {
		t.Fatalf("inventory %+v, want pid %d and 4 GPUs", inv, os.Getpid())
	}
	for i, g := range inv.GPUs { // minors 2,3,0,1 are NVML indices 0..3
		if want := []int{2, 3, 0, 1}[i]; g.Minor != want || g.Index == nil || *g.Index != i || g.UUID != sim.UUID(testNode, i) || g.EnergyMJ != nil {
			t.Errorf("GPU %d: %+v, want minor %d, index %d, uuid %s", i, g, want, i, sim.UUID(testNode, i))
		}
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("inventory mode: %v %v, want 0600", st, err)
	}
	gpus, e, err := agentproto.Expect(context.Background(), r.cfg.Agent.SocketPath(r.cfg.Spool.Dir), time.Second, time.Minute, []int{1}, "k")
	if err != nil || len(gpus) != 1 || gpus[0].UUID != sim.UUID(testNode, 3) {
		t.Fatalf("Expect from the running agent: %+v, %v", gpus, err)
	}
	e.Close()
	// the loop marks it at every tick: a stale mark is renewed
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the inventory marked again by the loop", settled, func() bool {
		st, err := os.Stat(p)
		return err == nil && time.Since(st.ModTime()) < time.Minute
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("inventory left behind after stop: %v", err)
	}
}
