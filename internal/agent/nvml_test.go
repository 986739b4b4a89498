//go:build nvml

package agent

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/testkit/clock"
)

// The whole agent cycle on real GPUs (NVML, cgroup attribution of real
// processes, segment write, aggregates): wall and CPU time, and the
// samples name the GPUs nvidia-smi lists.
func TestNVMLAgentCycle(t *testing.T) {
	a, clk, cfg := nvmlAgent(t, openNVML(t), nil)
	ctx := context.Background()
	if err := a.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 30
	cpu0, start := cpuTime(), time.Now()
	for i := 0; i < n; i++ {
		clk.Advance(cfg.Agent.Interval.Duration)
		if err := a.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wall, cpu := time.Since(start)/n, (cpuTime()-cpu0)/n
	t.Logf("agent cycle of %d real GPUs: %s wall, %s CPU per cycle", len(a.devs), wall, cpu)
	out, err := exec.Command("nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	want := strings.Fields(string(out))
	snap := a.snapshot()
	if len(snap.samples) != len(want) {
		t.Fatalf("%d samples per cycle, nvidia-smi lists %d GPUs", len(snap.samples), len(want))
	}
	for i, s := range snap.samples {
		if s.UUID != want[i] {
			t.Errorf("sample %d: %s, nvidia-smi %s", i, s.UUID, want[i])
		}
		t.Logf("GPU %d %s: missing %v, %d processes", s.Index, s.UUID, s.Missing, len(s.Procs))
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("/metrics:\n%s", scrape(t, a))
}

// The cycle on real GPUs with every catalogue metric: its CPU per cycle,
// and what each GPU gave or could not give.
func TestNVMLAgentCycleAllMetrics(t *testing.T) {
	a, clk, cfg := nvmlAgent(t, openNVML(t), []string{"all"})
	ctx := context.Background()
	if err := a.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 30
	cpu0, start := cpuTime(), time.Now()
	for i := 0; i < n; i++ {
		time.Sleep(100 * time.Millisecond) // GPM wants its samples apart
		clk.Advance(cfg.Agent.Interval.Duration)
		if err := a.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wall, cpu := (time.Since(start)-n*100*time.Millisecond)/n, (cpuTime()-cpu0)/n
	t.Logf("agent cycle of %d real GPUs, every metric: %s wall, %s CPU per cycle", len(a.devs), wall, cpu)
	for _, s := range a.snapshot().samples {
		t.Logf("GPU %d %s: metrics %v missing %v", s.Index, s.UUID, s.Metrics, s.Missing)
	}
	t.Logf("unsupported: %v", a.unsupported())
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
}

// openNVML opens the real NVML for the test.
func openNVML(t *testing.T) *gpu.Library {
	t.Helper()
	lib, err := gpu.OpenInterface(context.Background(), nvml.New(), 60*time.Second)
	if err != nil {
		t.Fatalf("open NVML: %v", err)
	}
	t.Cleanup(lib.Close)
	lib.Timeout = 5 * time.Second
	return lib
}

// nvmlAgent is an agent on the real GPUs of lib and this machine's
// processes, sampling metrics (nil: the default set), on a clock the test
// steps an interval a cycle: a cycle less than half an interval after the
// last is skipped.
func nvmlAgent(t *testing.T, lib *gpu.Library, metrics []string) (*Agent, *clock.Clock, config.Config) {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.Agent.ProcRoot = "/proc"
	if metrics != nil {
		cfg.Agent.Metrics = metrics
	}
	os.MkdirAll(cfg.Agent.IncomingDir, 0o755)
	clk := clock.New(time.Now())
	a, err := New(cfg, testCluster, testNode, Deps{Lib: lib, Now: clk.Now, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	return a, clk, cfg
}
