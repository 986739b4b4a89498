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

// benchEnv is a node of 8 busy simulated GPUs, each held by a job.
func benchEnv(b *testing.B) *testEnv {
	e := newEnvTB(b, 8, func(c *config.Config) { c.Agent.SegmentDuration = config.Dur(5 * time.Minute) })
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
func BenchmarkSampleCycle8GPUs(b *testing.B) {
	e := benchEnv(b)
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
