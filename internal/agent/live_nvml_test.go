//go:build nvml

package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/clock"
)

// The live-state file's added CPU beside today's cycle on real GPUs: two
// agents sample the same GPUs in turn, one without the file and one that
// also writes every snapshot at once.
func TestNVMLLiveCost(t *testing.T) {
	lib := openNVML(t)
	// Each cycle a whole interval after the last on the agents' clock: a
	// cycle less than half an interval after the last is skipped.
	clk := clock.New(time.Now())
	open := func(live bool) *Agent {
		root := t.TempDir()
		cfg := testConfig(root)
		cfg.Agent.ProcRoot = "/proc"
		if live {
			cfg.Agent.LiveDir = root
		}
		os.MkdirAll(cfg.Agent.IncomingDir, 0o755)
		a, err := New(cfg, testCluster, testNode, Deps{Lib: lib, Now: clk.Now, Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	base, live := open(false), open(true)
	ctx := context.Background()
	for _, a := range []*Agent{base, live} {
		if err := a.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	<-live.live.ch
	const n = 200
	var cpuBase, cpuLive time.Duration
	for i := 0; i < n; i++ {
		clk.Advance(base.interval)
		c0 := cpuTime()
		if err := base.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		c1 := cpuTime()
		if err := live.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-live.live.ch
		live.live.fillUsers(l)
		if err := live.live.write(l); err != nil {
			t.Fatal(err)
		}
		c2 := cpuTime()
		cpuBase += c1 - c0
		cpuLive += c2 - c1
	}
	if _, err := os.Stat(filepath.Join(live.cfg.LiveDir, testNode+".json")); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d real GPUs: cycle %s CPU, live-state file adds %s CPU per cycle: ratio %.3f",
		len(live.devs), cpuBase/n, (cpuLive-cpuBase)/n, float64(cpuLive-cpuBase)/float64(cpuBase))
	for _, a := range []*Agent{base, live} {
		if err := a.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}
