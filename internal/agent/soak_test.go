package agent

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// soakChildEnv makes the test binary, run with this test alone, the soak
// itself: its resident memory is then the agent's (and the test binary's),
// not what the package's other tests left in the process.
const soakChildEnv = "GPUSUITE_TEST_SOAK_CHILD"

// 24 simulated hours of 8 GPUs at a 1 s interval, with a job changing on
// every GPU every two hours, shipped every 30 s: memory flat, files
// rotated, no descriptor leak, every sample and aggregate shipped. It runs
// in a child process (soakChildEnv).
func TestSoak24SimulatedHours(t *testing.T) {
	if os.Getenv(soakChildEnv) == "" {
		runSoakChild(t)
		return
	}
	const gpus = 8
	e := newEnv(t, gpus, func(c *config.Config) { c.Agent.SegmentDuration = config.Dur(5 * time.Minute) })
	for i := 0; i < gpus; i++ {
		e.sim.Device(i).SetWorkload(sim.Sine(10, 95, 17*time.Minute, uint32(2000+i)))
	}
	ctx := context.Background()
	var heap1h uint64
	var fds1h int
	job := uint64(1000)
	running := map[int]uint64{}
	shipped := 0
	for sec := 1; sec <= 24*3600; sec++ {
		if sec%7200 == 1 { // new jobs every two hours
			for i := 0; i < gpus; i++ {
				if j, ok := running[i]; ok {
					e.event(record.JobEnd, j, i)
				}
				job++
				running[i] = job
				e.cgroup(uint32(2000+i), job)
				e.event(record.JobStart, job, i)
			}
		}
		e.clk.Advance(time.Second)
		if err := e.a.Cycle(ctx); err != nil {
			t.Fatal(err)
		}
		if sec%30 == 0 {
			n, err := e.ship()
			if err != nil {
				t.Fatal(err)
			}
			shipped += n
			e.a.backlog()
		}
		if sec == 3600 {
			heap1h, fds1h = heapInUse(), openFDs(t)
		}
	}
	heap24h, fds24h := heapInUse(), openFDs(t)
	// freed memory goes back to the OS, so resident is what is held
	debug.FreeOSMemory()
	if rss := vmRSS(t); rss > 30<<20 {
		t.Errorf("resident memory %d MiB after 24 simulated hours, target under 30 MiB", rss>>20)
	} else {
		t.Logf("resident memory after 24 simulated hours: %.1f MiB (the soak's own test process)", float64(rss)/(1<<20))
	}
	t.Logf("heap in use: %d KiB after 1 h, %d KiB after 24 h; fds %d → %d; %d files shipped", heap1h>>10, heap24h>>10, fds1h, fds24h, shipped)
	if heap24h > heap1h+4<<20 {
		t.Errorf("heap grew from %d to %d bytes over 23 simulated hours", heap1h, heap24h)
	}
	if fds24h > fds1h {
		t.Errorf("open descriptors grew from %d to %d", fds1h, fds24h)
	}
	for i := 0; i < gpus; i++ {
		e.event(record.JobEnd, running[i], i)
	}
	e.cycles(1)
	e.a.Stop()
	if _, err := e.ship(); err != nil {
		t.Fatal(err)
	}
	got := e.arrived()
	if n := len(got.samples); n != gpus*(24*3600+1) {
		t.Errorf("%d samples arrived, want %d", n, gpus*(24*3600+1))
	}
	if n := len(got.segments); n < 24*12 {
		t.Errorf("%d segments: files not rotated every 5 minutes", n)
	}
	checkConsistent(t, got)
	if n := len(got.aggs); n != gpus*12 {
		t.Errorf("%d job × GPU aggregates, want %d", n, gpus*12)
	}
}

// runSoakChild runs TestSoak24SimulatedHours in a new process of the test
// binary and fails with its output when it fails.
func runSoakChild(t *testing.T) {
	limit := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d) - 10*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSoak24SimulatedHours$", "-test.count=1", "-test.v", "-test.timeout=0")
	cmd.Env = append(os.Environ(), soakChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the soak's process: %v\n%s", err, out)
	}
	t.Logf("the soak's process:\n%s", out)
}

// vmRSS is this process's resident set size in bytes.
func vmRSS(t testing.TB) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
