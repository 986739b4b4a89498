package agent

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEnv is a node of 8 busy simulated GPUs, each held by a job,
// sampling metrics (agent.metrics).
func benchEnv(b *testing.B, metrics ...string) *testEnv {
	e := newEnvTB(b, 8, func(c *config.Config) {
		c.Agent.SegmentDuration = config.Dur(5 * time.Minute)
		if len(metrics) > 0 {
			c.Agent.Metrics = metrics
		}
	})
	for i := 0; i < 8; i++ {
		e.sim.Device(i).SetWorkload(sim.Sine(10, 95, 17*time.Minute, uint32(3000+i)))
		e.cgroup(uint32(3000+i), uint64(100+i))
		e.event(record.JobStart, uint64(100+i), i)
	}
	e.cycles(2)
	return e
}

// BenchmarkSampleCycle8GPUs is one sample cycle of 8 GPUs: NVML reads,
// attribution (cgroup reads), segment write, aggregate fold, metrics
// snapshot; rolls every 5 simulated minutes included. cpu-ns/op is the
// process's user+system CPU time per cycle.
func BenchmarkSampleCycle8GPUs(b *testing.B) { benchCycle(b, benchEnv(b)) }

// BenchmarkSampleCycle8GPUsAllMetrics is the cycle with every catalogue
// metric (agent.metrics = ["all"]): clocks, field values and GPM besides.
func BenchmarkSampleCycle8GPUsAllMetrics(b *testing.B) { benchCycle(b, benchEnv(b, "all")) }

func benchCycle(b *testing.B, e *testEnv) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.clk.Advance(time.Second)
		if err := e.a.Cycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkScrape8GPUs is one /metrics scrape of a node of 8 GPUs.
func BenchmarkScrape8GPUs(b *testing.B) {
	e := benchEnv(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(scrape(b, e.a)) < 1000 {
			b.Fatal("short scrape")
		}
	}
}

// BenchmarkProfile8GPUs is one 200 ms step of a profile of a job holding
// 8 GPUs, every catalogue metric: the profile ticks (two 100 ms ticks, one
// of which samples) and the normal cycle's share, 1/50 of a 10 s cycle of
// no GPU. core-%-at-200ms is the CPU this takes per wall second.
func BenchmarkProfile8GPUs(b *testing.B) {
	e := newEnvTB(b, 8, func(c *config.Config) {
		c.Agent.Interval = config.Dur(10 * time.Second)
		c.Agent.SegmentDuration = config.Dur(5 * time.Minute)
		c.Agent.Metrics = []string{"all"}
		c.Agent.ProfileMaxDuration = config.Dur(config.MaxProfileDuration)
	})
	gpus := make([]int, 8)
	for i := range gpus {
		e.sim.Device(i).SetWorkload(sim.Sine(10, 95, 17*time.Minute, uint32(3000+i)))
		e.cgroup(uint32(3000+i), 100)
		gpus[i] = i
	}
	e.event(record.JobStart, 100, gpus...)
	ctx := context.Background()
	step := func(i int) {
		if i%50 == 0 {
			if err := e.a.Cycle(ctx); err != nil {
				b.Fatal(err)
			}
		}
		for k := 0; k < 2; k++ {
			e.clk.Advance(100 * time.Millisecond)
			if err := e.a.profileTick(ctx, e.clk.Now()); err != nil {
				b.Fatal(err)
			}
		}
	}
	e.clk.Advance(10 * time.Second)
	if err := e.a.Cycle(ctx); err != nil {
		b.Fatal(err)
	}
	if r := ask(e, 100, 200*time.Millisecond, config.MaxProfileDuration, 0); r.Error != "" {
		b.Fatal(r.Error)
	}
	e.clk.Advance(10 * time.Second)
	for i := 0; i < 60; i++ {
		step(i)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.StopTimer()
	if p := e.a.profiles[jobKey(100, 0)]; p == nil || p.next < int64(b.N) {
		b.Fatal("the profile did not sample every step")
	}
	perStep := float64(cpuTime()-cpu0) / float64(b.N)
	b.ReportMetric(perStep, "cpu-ns/op")
	b.ReportMetric(perStep/float64(200*time.Millisecond)*100, "core-%-at-200ms")
}
