//go:build nvml

// Real-GPU test of the chosen metrics and the event set (see nvml_test.go
// for how to run it).
package gpu_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
)

// saneRange is what a real GPU can give for each unit a catalogue name
// ends in.
func saneRange(name string) (lo, hi float64) {
	switch {
	case strings.HasSuffix(name, "_pct"):
		return 0, 100.5
	case strings.HasSuffix(name, "_mhz"):
		return 1, 10000
	case strings.HasSuffix(name, "_c"):
		return 1, 130
	case strings.HasSuffix(name, "_bytes_per_s"):
		return 0, 10e12 // 10 TB/s
	default: // counters
		return 0, 1e15
	}
}

// Every catalogue metric is read with a sane value, or said unsupported
// with a reason; after the first reading none is missing for any other
// reason.
func TestNVMLChosenMetrics(t *testing.T) {
	lib, devs := openReal(t)
	all, err := record.ExpandMetrics([]string{record.SetAll})
	if err != nil {
		t.Fatal(err)
	}
	lib.Choose(devs, all)
	ctx := context.Background()
	first := lib.SampleAll(ctx, devs)
	time.Sleep(time.Second) // the rates' span, as an agent interval
	start := time.Now()
	second := lib.SampleAll(ctx, devs)
	t.Logf("reading %d GPUs with every metric: %s wall", len(devs), time.Since(start))
	for i, d := range devs {
		unsupported := map[string]string{}
		for _, u := range d.Unsupported() {
			n, why, _ := strings.Cut(u, ": ")
			if why == "" {
				t.Errorf("GPU %d: %s unsupported without a reason", d.Index, n)
			}
			unsupported[n] = why
		}
		t.Logf("GPU %d %s %s: first reading missing %v", d.Index, d.UUID, d.Model, first[i].Missing)
		t.Logf("GPU %d: metrics %v; unsupported %v; missing %v", d.Index, second[i].Metrics, unsupported, second[i].Missing)
		for _, m := range second[i].Missing {
			t.Errorf("GPU %d: missing at the second reading: %s", d.Index, m)
		}
		for _, n := range all {
			v, ok := second[i].Metrics[n]
			_, no := unsupported[n]
			switch {
			case ok && no:
				t.Errorf("GPU %d: %s = %v and unsupported", d.Index, n, v)
			case !ok && !no:
				t.Errorf("GPU %d: %s neither read nor unsupported", d.Index, n)
			case ok:
				if lo, hi := saneRange(n); v < lo || v > hi {
					t.Errorf("GPU %d: %s = %v, outside %v..%v", d.Index, n, v, lo, hi)
				}
			}
		}
		if d.Parent == "" && strings.Contains(d.Model, "H100") {
			for _, n := range []string{"sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct"} {
				if _, ok := second[i].Metrics[n]; !ok {
					t.Errorf("GPU %d (%s): no %s: GPM should read on Hopper (unsupported: %s)", d.Index, d.Model, n, unsupported[n])
				}
			}
		}
	}
}

// The event set registers every whole GPU for Xid (and ECC where the GPU
// has it), and its goroutine stops within its bounded wait.
func TestNVMLEventSet(t *testing.T) {
	lib, devs := openReal(t)
	w, err := lib.WatchEvents(context.Background(), devs)
	if err != nil {
		t.Fatalf("register for events: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan gpu.Event, 16)
	go w.Run(ctx, func(e gpu.Event) { got <- e })
	time.Sleep(2 * gpu.EventWait) // a few waits on the real set
	readings := lib.SampleAll(context.Background(), devs)
	w.FillXID(readings, devs)
	for _, r := range readings {
		if r.Parent == "" && r.XIDErrors == nil {
			t.Errorf("GPU %d: no Xid count (missing %v)", r.Index, r.Missing)
		}
	}
	start := time.Now()
	cancel()
	w.Stop(10 * gpu.EventWait)
	if d := time.Since(start); d > 2*gpu.EventWait {
		t.Errorf("event watch took %s to stop, want under %s", d, 2*gpu.EventWait)
	}
	close(got)
	for e := range got {
		t.Logf("event during the test: GPU %d %s %d", e.Dev.Index, e.Kind, e.Code)
	}
}
