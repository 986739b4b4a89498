package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hookgpus"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	_ "github.com/aicloud/gpusuite/internal/sim/simulated" // the hooks under test open gpu.backend = "simulated"
)

var baseEnv = map[string]string{
	"SLURM_JOB_ID": "42", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1000", "SLURM_JOB_GID": "1000",
	"SLURM_JOB_ACCOUNT": "team-a", "SLURM_JOB_PARTITION": "gpu", "SLURMD_NODENAME": "gpu01",
	"SLURM_CLUSTER_NAME": "testcl", "SLURM_JOB_GPUS": "0,2", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
}

func envWith(kv ...string) func(string) string {
	m := map[string]string{}
	for k, v := range baseEnv {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func simConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Spool.Dir = filepath.Join(t.TempDir(), "spool")
	cfg.GPU.Backend = "simulated"
	cfg.GPU.Simulated.Minors = []int{2, 3, 0, 1}
	cfg.Hooks.Timeout = config.Dur(2 * time.Second)
	cfg.Hooks.NVMLTimeout = config.Dur(200 * time.Millisecond)
	return cfg
}

func readEvents(t *testing.T, dir string) []record.Event {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "event.*.json"))
	var evs []record.Event
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var ev record.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func testDeps(getenv func(string) string) Deps {
	return Deps{Getenv: getenv, Now: func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) },
		AskGPUs: hookgpus.Asker(hookgpus.OpenConfigured)}
}

func discard() *bytes.Buffer { return &bytes.Buffer{} }

// SLURM_JOB_GPUS holds minors; the simulated node's minors are permuted, so
// the recorded UUIDs prove the hook mapped minor -> NVML index.
func TestRunMapsMinorsToUUIDs(t *testing.T) {
	cfg := simConfig(t)
	res, err := Run(context.Background(), record.JobStart, cfg, testDeps(envWith()), logger(discard()))
	if err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, cfg.Spool.Dir)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ev := evs[0]
	if d := cmp.Diff(res.Event.Key, ev.Key); d != "" {
		t.Error(d)
	}
	if ev.Key != "testcl/42/0/gpu01/job_start" || ev.Schema != record.EventSchema || ev.Source != "prolog" {
		t.Errorf("header: %+v", ev)
	}
	// minors [2,3,0,1] by index: minor 0 is index 2, minor 2 is index 0.
	wantIdx := map[int]int{0: 2, 2: 0}
	for _, g := range ev.GPUs {
		if g.Index == nil || *g.Index != wantIdx[g.Minor] {
			t.Errorf("minor %d: index %v, want %d", g.Minor, g.Index, wantIdx[g.Minor])
			continue
		}
		if g.UUID != sim.UUID("gpu01", *g.Index) || g.Model == "" || g.EnergyMJ == nil {
			t.Errorf("minor %d: %+v", g.Minor, g)
		}
	}
	if len(ev.Quality) != 0 {
		t.Errorf("quality flags on a clean run: %v", ev.Quality)
	}
	if ev.Job.Account != "team-a" || ev.Job.User != "alice" || *ev.Job.UID != 1000 {
		t.Errorf("job: %+v", ev.Job)
	}
}

func TestRunCases(t *testing.T) {
	tests := []struct {
		name        string
		kind        record.Kind
		env         func(string) string
		mutate      func(*config.Config)
		open        hookgpus.Open
		wantErr     string
		wantEvents  int
		wantQuality string
		check       func(*testing.T, record.Event)
	}{
		{name: "no GPUs", kind: record.JobStart, env: envWith("SLURM_JOB_GPUS", ""), wantEvents: 1,
			check: func(t *testing.T, ev record.Event) {
				if len(ev.GPUs) != 0 {
					t.Errorf("gpus %v", ev.GPUs)
				}
			}},
		{name: "epilog exit code", kind: record.JobEnd, env: envWith("SLURM_JOB_EXIT_CODE2", "3:0", "SLURM_JOB_EXIT_CODE", "768"), wantEvents: 1,
			check: func(t *testing.T, ev record.Event) {
				if ev.Job.Exit == nil || ev.Job.Exit.Code != 3 || ev.Kind != record.JobEnd {
					t.Errorf("exit %+v kind %s", ev.Job.Exit, ev.Kind)
				}
			}},
		{name: "no job id", kind: record.JobStart, env: envWith("SLURM_JOB_ID", "garbage"), wantErr: "SLURM_JOB_ID"},
		{name: "garbage values recorded with flags", kind: record.JobStart, env: envWith("SLURM_JOB_UID", "x", "SLURM_JOB_GPUS", "a-b"), wantEvents: 1, wantQuality: "env_invalid: SLURM_JOB_UID"},
		{name: "no node name uses config", kind: record.JobStart, env: envWith("SLURMD_NODENAME", ""),
			mutate: func(c *config.Config) { c.Cluster.Node = "cfgnode" }, wantEvents: 1, wantQuality: "env_missing: SLURMD_NODENAME",
			check: func(t *testing.T, ev record.Event) {
				if ev.Node != "cfgnode" {
					t.Errorf("node %q", ev.Node)
				}
			}},
		{name: "nvml fails to load", kind: record.JobStart, env: envWith(), mutate: func(c *config.Config) { c.GPU.Simulated.Fail = true },
			wantEvents: 1, wantQuality: "nvml_unavailable",
			check: func(t *testing.T, ev record.Event) {
				if len(ev.GPUs) != 2 || ev.GPUs[0].Minor != 0 || ev.GPUs[1].Minor != 2 || ev.GPUs[0].UUID != "" {
					t.Errorf("minors must still be recorded: %+v", ev.GPUs)
				}
			}},
		{name: "real nvml absent", kind: record.JobStart, env: envWith(), mutate: func(c *config.Config) { c.GPU.Backend = "nvml" },
			wantEvents: 1, wantQuality: "nvml_unavailable"},
		{name: "nvml hangs", kind: record.JobStart, env: envWith(), mutate: func(c *config.Config) { c.GPU.Simulated.Hang = true },
			wantEvents: 1, wantQuality: "timed out"},
		{name: "lost GPU", kind: record.JobEnd, env: envWith(),
			open: func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
				s, err := sim.New(sim.Options{Node: req.Node, Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}})
				if err != nil {
					return nil, err
				}
				s.Device(0).Lose() // minor 2
				return gpu.OpenInterface(ctx, s, time.Second)
			},
			wantEvents: 1, wantQuality: "gpu_minor_2",
			check: func(t *testing.T, ev record.Event) {
				if ev.GPUs[0].UUID == "" || ev.GPUs[1].UUID != "" {
					t.Errorf("the healthy GPU must be identified, the lost one flagged: %+v", ev.GPUs)
				}
			}},
		{name: "spool is a file", kind: record.JobStart, env: envWith(),
			mutate: func(c *config.Config) {
				os.WriteFile(c.Spool.Dir, nil, 0o600)
			}, wantErr: "record follows so it can be replayed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simConfig(t)
			if tt.mutate != nil {
				tt.mutate(&cfg)
			}
			deps := testDeps(tt.env)
			if tt.open != nil {
				deps.AskGPUs = hookgpus.Asker(tt.open)
			}
			start := time.Now()
			res, err := Run(context.Background(), tt.kind, cfg, deps, logger(discard()))
			if el := time.Since(start); el > cfg.Hooks.Timeout.Duration {
				t.Errorf("took %s, over the %s bound", el, cfg.Hooks.Timeout.Duration)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			evs := readEvents(t, cfg.Spool.Dir)
			if len(evs) != tt.wantEvents {
				t.Fatalf("%d events, want %d", len(evs), tt.wantEvents)
			}
			if tt.wantQuality != "" && !strings.Contains(strings.Join(evs[0].Quality, "|"), tt.wantQuality) {
				t.Errorf("quality %q lacks %q", evs[0].Quality, tt.wantQuality)
			}
			if res.Event == nil {
				t.Error("no event in result")
			}
			if tt.check != nil {
				tt.check(t, evs[0])
			}
		})
	}
}

// An epilog that cannot read the exit code records no exit (JSON: absent)
// and says why; it never records 0, which reads as success.
func TestEpilogExitUnknown(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		wantExit any // the event's job.exit.code as JSON decodes it; nil = absent
	}{
		{name: "success", env: []string{"SLURM_JOB_EXIT_CODE2", "0:0", "SLURM_JOB_EXIT_CODE", "0"}, wantExit: float64(0)},
		{name: "raw only", env: []string{"SLURM_JOB_EXIT_CODE", "512"}, wantExit: float64(2)},
		{name: "missing"},
		{name: "code2 garbage", env: []string{"SLURM_JOB_EXIT_CODE2", "x:y"}},
		{name: "raw garbage", env: []string{"SLURM_JOB_EXIT_CODE", "zero", "SLURM_JOB_DERIVED_EC", "0"}},
		{name: "both garbage", env: []string{"SLURM_JOB_EXIT_CODE2", "1", "SLURM_JOB_EXIT_CODE", "-5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simConfig(t)
			if _, err := Run(context.Background(), record.JobEnd, cfg, testDeps(envWith(tt.env...)), logger(discard())); err != nil {
				t.Fatal(err)
			}
			names, _ := filepath.Glob(filepath.Join(cfg.Spool.Dir, "event.*.json"))
			if len(names) != 1 {
				t.Fatalf("%d events", len(names))
			}
			var ev struct {
				Job     map[string]any `json:"job"`
				Quality []string       `json:"quality"`
			}
			b, err := os.ReadFile(names[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatal(err)
			}
			var got any
			if e, ok := ev.Job["exit"].(map[string]any); ok {
				got = e["code"]
			} else if ev.Job["exit"] != nil {
				t.Fatalf("job.exit is %v", ev.Job["exit"])
			}
			if got != tt.wantExit {
				t.Errorf("job.exit.code = %v, want %v\n%s", got, tt.wantExit, b)
			}
			noted := strings.Contains(strings.Join(ev.Quality, "|"), "exit_unknown")
			if noted != (tt.wantExit == nil) {
				t.Errorf("exit_unknown noted: %v, want %v (quality %q)", noted, tt.wantExit == nil, ev.Quality)
			}
		})
	}
}

func TestEpilogTwiceAndWithoutProlog(t *testing.T) {
	cfg := simConfig(t)
	var logs bytes.Buffer
	for i := 0; i < 2; i++ {
		if _, err := Run(context.Background(), record.JobEnd, cfg, testDeps(envWith()), logger(&logs)); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	evs := readEvents(t, cfg.Spool.Dir)
	if len(evs) != 1 || evs[0].Kind != record.JobEnd {
		t.Fatalf("events %+v, want one job_end", evs)
	}
	if !strings.Contains(logs.String(), "already recorded") {
		t.Errorf("second epilog not logged as duplicate: %s", logs.String())
	}
}

func TestHealthCheck(t *testing.T) {
	proc := t.TempDir()
	writeCgroup := func(pid int, body string) {
		os.MkdirAll(filepath.Join(proc, itoa(pid)), 0o755)
		os.WriteFile(filepath.Join(proc, itoa(pid), "cgroup"), []byte(body), 0o644)
	}
	writeCgroup(100, "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n")
	writeCgroup(200, "0::/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0\n")
	tests := []struct {
		name    string
		pid     uint32
		enabled bool
		want    string
	}{
		{"own process", 100, true, ""},
		{"other job", 200, true, "job 7"},
		{"no job", 300, true, "outside any job"},
		{"disabled", 200, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simConfig(t)
			cfg.Hooks.HealthCheck = tt.enabled
			deps := testDeps(envWith())
			deps.ProcRoot = proc
			deps.AskGPUs = hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
				s, _ := sim.New(sim.Options{Node: req.Node, Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}})
				pid := tt.pid
				s.Device(2).SetWorkload(func(time.Time) sim.Load { // minor 0
					return sim.Load{GPUUtil: 50, Procs: []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 1 << 30}}}
				})
				return gpu.OpenInterface(ctx, s, time.Second)
			})
			res, err := Run(context.Background(), record.JobStart, cfg, deps, logger(discard()))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && res.Unhealthy != "" || tt.want != "" && !strings.Contains(res.Unhealthy, tt.want) {
				t.Errorf("unhealthy = %q, want %q", res.Unhealthy, tt.want)
			}
			if len(readEvents(t, cfg.Spool.Dir)) != 1 {
				t.Error("the event must be recorded even when unhealthy")
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A hung agent costs the job's start path one socket timeout: after the
// identity request fails, the hook neither retries nor announces.
func TestHungAgentAskedOnce(t *testing.T) {
	cfg := simConfig(t)
	cfg.Agent.Socket = filepath.Join(t.TempDir(), "agent.sock")
	cfg.Agent.SocketTimeout = config.Dur(100 * time.Millisecond)
	l, err := net.Listen("unix", cfg.Agent.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			defer c.Close() // hold it open, never answer
		}
	}()
	if _, err := Run(context.Background(), record.JobStart, cfg, testDeps(envWith()), logger(discard())); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, cfg.Spool.Dir)
	if len(evs) != 1 || evs[0].GPUs[0].UUID == "" {
		t.Fatalf("want one event identified through NVML, got %+v", evs)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the hung agent was contacted %d times, want 1", n)
	}
}

// Values that parse but no job can have are flagged and dropped, so that
// ingest takes the event instead of quarantining it whole.
func TestRunFlagsImpossibleValues(t *testing.T) {
	id := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name        string
		env         []string
		wantQuality []string
		wantRestart int
		wantUID     *int64
		wantGID     *int64
	}{
		{"restart count beyond 16 bits", []string{"SLURM_JOB_RESTART_COUNT", "99999999"},
			[]string{`env_invalid: SLURM_JOB_RESTART_COUNT="99999999": above 65535; recorded as 0`}, 0, id(1000), id(1000)},
		{"largest restart count", []string{"SLURM_JOB_RESTART_COUNT", "65535"}, nil, 65535, id(1000), id(1000)},
		{"uid -1", []string{"SLURM_JOB_UID", "-1"},
			[]string{`env_invalid: SLURM_JOB_UID="-1": not an id (0..4294967293); recorded as absent`}, 0, nil, id(1000)},
		{"uid Slurm's NO_VAL", []string{"SLURM_JOB_UID", "4294967294"},
			[]string{`env_invalid: SLURM_JOB_UID="4294967294": not an id (0..4294967293); recorded as absent`}, 0, nil, id(1000)},
		{"gid (gid_t)-1", []string{"SLURM_JOB_GID", "4294967295"},
			[]string{`env_invalid: SLURM_JOB_GID="4294967295": not an id (0..4294967293); recorded as absent`}, 0, id(1000), nil},
		{"nobody", []string{"SLURM_JOB_UID", "65534", "SLURM_JOB_GID", "65534"}, nil, 0, id(65534), id(65534)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simConfig(t)
			if _, err := Run(context.Background(), record.JobStart, cfg, testDeps(envWith(tc.env...)), logger(discard())); err != nil {
				t.Fatal(err)
			}
			evs := readEvents(t, cfg.Spool.Dir)
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			ev := evs[0]
			if diff := cmp.Diff(tc.wantQuality, ev.Quality); diff != "" {
				t.Errorf("quality (-want +got):\n%s", diff)
			}
			if ev.Job.RestartCount != tc.wantRestart || ev.Key != record.EventKey(ev.Cluster, 42, tc.wantRestart, ev.Node, record.JobStart) {
				t.Errorf("restart count %d, key %q: want run %d", ev.Job.RestartCount, ev.Key, tc.wantRestart)
			}
			if diff := cmp.Diff([]*int64{tc.wantUID, tc.wantGID}, []*int64{ev.Job.UID, ev.Job.GID}); diff != "" {
				t.Errorf("uid, gid (-want +got):\n%s", diff)
			}
		})
	}
}
