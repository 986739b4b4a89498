package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// BenchmarkLiveSnapshot8GPUs measures, beside today's cycle, what the
// live-state file adds: two agents of 8 busy GPUs, one without the file
// and one with it, sample in turn; the second also writes every snapshot
// (user names, JSON, temp file, rename) at once. live-cpu-ratio is the
// added CPU over the plain cycle's CPU (process user+system time).
func BenchmarkLiveSnapshot8GPUs(b *testing.B) {
	base := benchEnv(b)
	live := newEnvTB(b, 8, func(c *config.Config) {
		c.Agent.SegmentDuration = config.Dur(5 * time.Minute)
		c.Agent.LiveDir = filepath.Dir(c.Spool.Dir)
	})
	for i := 0; i < 8; i++ {
		live.sim.Device(i).SetWorkload(sim.Sine(10, 95, 17*time.Minute, uint32(3000+i)))
		live.cgroup(uint32(3000+i), uint64(100+i))
		live.event(record.JobStart, uint64(100+i), i)
	}
	live.cycles(2)
	<-live.a.live.ch
	ctx := context.Background()
	var cpuBase, cpuLive time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		base.clk.Advance(time.Second)
		c0 := cpuTime()
		if err := base.a.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
		c1 := cpuTime()
		live.clk.Advance(time.Second)
		if err := live.a.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
		l := <-live.a.live.ch
		live.a.live.fillUsers(l)
		if err := live.a.live.write(l); err != nil {
			b.Fatal(err)
		}
		c2 := cpuTime()
		cpuBase += c1 - c0
		cpuLive += c2 - c1
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuBase)/float64(b.N), "cycle-cpu-ns/op")
	b.ReportMetric(float64(cpuLive-cpuBase)/float64(b.N), "live-cpu-ns/op")
	b.ReportMetric(float64(cpuLive-cpuBase)/float64(cpuBase), "live-cpu-ratio")
}
