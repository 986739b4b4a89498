package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/spool"
	"github.com/aicloud/gpusuite/internal/testkit/clock"
)

const testNode = "gpu01"
const testCluster = "cl"

type testEnv struct {
	t        testing.TB
	a        *Agent
	sim      *sim.Server
	lib      *gpu.Library
	clk      *clock.Clock // the injected clock: tests move it, the agent and the simulated GPUs read it
	cfg      config.Config
	root     string
	incoming string
	procRoot string
}

func testConfig(root string) config.Config {
	cfg := config.Default()
	cfg.Cluster.Name = testCluster
	cfg.Cluster.Node = testNode
	cfg.Spool.Dir = filepath.Join(root, "spool")
	cfg.Agent.StateDir = filepath.Join(root, "state")
	cfg.Agent.IncomingDir = filepath.Join(root, "incoming")
	cfg.Agent.ProcRoot = filepath.Join(root, "proc")
	cfg.Agent.Interval = config.Dur(time.Second)
	cfg.Agent.SegmentDuration = config.Dur(time.Minute)
	cfg.Agent.ReinitAfter = config.Dur(5 * time.Second)
	cfg.Agent.MetricsListen = ""
	cfg.Agent.LiveDir = ""
	cfg.Agent.ProfileSocket = filepath.Join(root, "run", "profile.sock")
	return cfg
}

func newEnv(t *testing.T, gpus int, edit func(*config.Config)) *testEnv {
	return newEnvTB(t, gpus, edit)
}

func newEnvTB(t testing.TB, gpus int, edit func(*config.Config)) *testEnv {
	t.Helper()
	return newEnvModel(t, gpus, "h100", edit)
}

// newEnvModel is newEnv on simulated GPUs of model (sim.Models).
func newEnvModel(t testing.TB, gpus int, model string, edit func(*config.Config)) *testEnv {
	t.Helper()
	root := t.TempDir()
	cfg := testConfig(root)
	if edit != nil {
		edit(&cfg)
	}
	for _, d := range []string{cfg.Agent.IncomingDir, cfg.Agent.ProcRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.New(time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
	s, err := sim.New(sim.Options{Node: testNode, Count: gpus, Model: model, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	lib, err := gpu.OpenInterface(context.Background(), s, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, sim: s, lib: lib, clk: clk, cfg: cfg, root: root, incoming: cfg.Agent.IncomingDir, procRoot: cfg.Agent.ProcRoot}
	e.a = e.open()
	return e
}

// open starts an agent on the env's directories (again, after a "crash").
func (e *testEnv) open() *Agent {
	e.t.Helper()
	a, err := New(e.cfg, testCluster, testNode, Deps{Lib: e.lib, Now: e.clk.Now, Log: quietLog()})
	if err != nil {
		e.t.Fatal(err)
	}
	// the event watch's goroutine ends within one wait once told to
	e.t.Cleanup(func() {
		if a.stopEvents != nil {
			a.stopEvents()
		}
	})
	return a
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cycles advances the clock by one interval and samples, n times.
func (e *testEnv) cycles(n int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		e.clk.Advance(time.Second)
		if err := e.a.Cycle(context.Background()); err != nil {
			e.t.Fatal(err)
		}
	}
}

// cgroup makes pid a process of job (0: outside any job) under procRoot.
func (e *testEnv) cgroup(pid uint32, job uint64) {
	e.t.Helper()
	dir := filepath.Join(e.procRoot, itoa(uint64(pid)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	line := "0::/user.slice/user-1000.slice/session-4.scope\n"
	if job != 0 {
		line = "0::/system.slice/slurmstepd.scope/job_" + itoa(job) + "/step_0/user/task_0\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(line), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// energy reads the simulated counter of GPU i now.
func (e *testEnv) energy(i int) uint64 {
	v, r := e.sim.Device(i).GetTotalEnergyConsumption()
	if r != 0 {
		e.t.Fatalf("energy of GPU %d: %v", i, r)
	}
	return v
}

// event spools a job event as the prolog/epilog would.
func (e *testEnv) event(kind record.Kind, job uint64, gpus ...int) *record.Event {
	e.t.Helper()
	ev := &record.Event{
		Schema: record.EventSchema, Kind: kind, Time: e.clk.Now(), Source: "prolog",
		Cluster: testCluster, Node: testNode,
		Job: record.Job{ID: job, User: "alice", Account: "physics", Partition: "gpu"},
	}
	ev.Key = record.EventKey(testCluster, job, 0, testNode, kind)
	for _, i := range gpus {
		en := e.energy(i)
		idx := i
		ev.GPUs = append(ev.GPUs, record.GPU{Minor: i, Index: &idx, UUID: sim.UUID(testNode, i), Model: "NVIDIA H100 80GB HBM3", EnergyMJ: &en})
		ev.Job.GPUs = append(ev.Job.GPUs, i)
	}
	data, _ := json.Marshal(ev)
	if err := (spool.Dir{Path: e.cfg.Spool.Dir}).Write(record.EventFileName(testCluster, job, 0, testNode, kind), data); err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// ship applies spooled events and ships, as the shipper does.
func (e *testEnv) ship() (int, error) {
	return e.a.Ship(context.Background())
}

// stopAndShip stops the agent as a shutdown does (closing its segment)
// and ships what it left in the spool.
func (e *testEnv) stopAndShip() {
	e.t.Helper()
	if err := e.a.Stop(); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.ship(); err != nil {
		e.t.Fatal(err)
	}
}

// shipped is what arrived in incoming/<node>/.
type shipped struct {
	names     []string
	events    []record.Event
	segments  []record.SegmentHeader
	samples   []record.Sample
	gpuEvents []record.GPUEvent
	aggs      map[string]record.JobGPU // latest seq per key
	allAggs   []record.JobGPU
}

func (e *testEnv) arrived() shipped {
	e.t.Helper()
	return readIncoming(e.t, filepath.Join(e.incoming, testNode))
}

func readIncoming(t testing.TB, dir string) shipped {
	t.Helper()
	var s shipped
	s.aggs = map[string]record.JobGPU{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		name := en.Name()
		s.names = append(s.names, name)
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(name, "."):
			t.Errorf("temp file %s visible in incoming", name)
		case strings.HasPrefix(name, "event."):
			var ev record.Event
			mustStrict(t, name, data, &ev)
			s.events = append(s.events, ev)
		case strings.HasPrefix(name, "gpuevent."):
			var ev record.GPUEvent
			mustStrict(t, name, data, &ev)
			s.gpuEvents = append(s.gpuEvents, ev)
		case strings.HasPrefix(name, "jobgpu."):
			var g record.JobGPU
			mustStrict(t, name, data, &g)
			if want := record.JobGPUFileName(g.Cluster, g.Job, g.RestartCount, g.Node, g.UUID, g.Seq); want != name {
				t.Errorf("aggregate file %s should be named %s", name, want)
			}
			s.allAggs = append(s.allAggs, g)
			if old, ok := s.aggs[g.Key]; !ok || g.Seq > old.Seq {
				s.aggs[g.Key] = g
			}
		case strings.HasPrefix(name, "samples."):
			if len(data) == 0 || data[len(data)-1] != '\n' {
				t.Errorf("segment %s is not whole", name)
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			sc.Scan()
			var h record.SegmentHeader
			mustStrict(t, name, sc.Bytes(), &h)
			if want := record.SegmentFileName(h.Cluster, h.Node, h.Seq); want != name || h.Key != record.SegmentKey(h.Cluster, h.Node, h.Seq) {
				t.Errorf("segment %s: header %+v does not match its name", name, h)
			}
			s.segments = append(s.segments, h)
			for sc.Scan() {
				var smp record.Sample
				mustStrict(t, name, sc.Bytes(), &smp)
				s.samples = append(s.samples, smp)
			}
		default:
			t.Errorf("unexpected file %s in incoming", name)
		}
	}
	sort.Slice(s.samples, func(i, j int) bool {
		if !s.samples[i].Time.Equal(s.samples[j].Time) {
			return s.samples[i].Time.Before(s.samples[j].Time)
		}
		return s.samples[i].Index < s.samples[j].Index
	})
	return s
}

func mustStrict(t testing.TB, name string, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v in %q", name, err, data)
	}
}

func spoolNames(t testing.TB, dir string) []string {
	t.Helper()
	names, err := (spool.Dir{Path: dir}).List()
	if err != nil {
		t.Fatal(err)
	}
	return names
}
