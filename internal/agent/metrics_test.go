package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// The default set writes today's samples: no metrics object, no header
// list.
func TestDefaultMetricsWriteNoMetrics(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.sim.Device(0).SetWorkload(sim.Busy(80, 100))
	e.cycles(3)
	e.stopAndShip()
	got := e.arrived()
	if len(got.samples) == 0 {
		t.Fatal("no samples shipped")
	}
	for _, h := range got.segments {
		if h.Metrics != nil || h.Unsupported != nil {
			t.Errorf("default set: header names metrics %v, unsupported %v", h.Metrics, h.Unsupported)
		}
	}
	for _, s := range got.samples {
		if s.Metrics != nil {
			t.Fatalf("default set: sample carries metrics %v", s.Metrics)
		}
	}
}

// Every catalogue metric on GPUs that give them all (H100), and on an
// A100, without GPM, the GPM metrics said unsupported once per segment,
// never written as 0 and not repeated as missing in every sample.
func TestChosenMetrics(t *testing.T) {
	all, err := record.ExpandMetrics([]string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	var gpmNames []string
	for _, m := range record.Catalogue {
		if m.Set == record.SetGPM {
			gpmNames = append(gpmNames, m.Name)
		}
	}
	for _, tc := range []struct {
		model       string
		unsupported []string
	}{
		{"h100", nil},
		{"a100", gpmNames},
	} {
		t.Run(tc.model, func(t *testing.T) {
			e := newEnvModel(t, 2, tc.model, func(c *config.Config) { c.Agent.Metrics = []string{"all"} })
			e.sim.Device(0).SetWorkload(sim.Busy(80, 100))
			e.cgroup(100, 0)
			e.cycles(5)
			e.stopAndShip()
			got := e.arrived()
			if len(got.segments) == 0 {
				t.Fatal("no segment shipped")
			}
			var wantUnsupported map[string][]string
			if tc.unsupported != nil {
				wantUnsupported = map[string][]string{}
				for i := 0; i < 2; i++ {
					var l []string
					for _, n := range tc.unsupported {
						l = append(l, n+": GPM not supported by this GPU")
					}
					wantUnsupported[sim.UUID(testNode, i)] = sortedStrings(l)
				}
			}
			for _, h := range got.segments {
				if d := cmp.Diff(all, h.Metrics); d != "" {
					t.Errorf("header metrics (-want +got):\n%s", d)
				}
				if d := cmp.Diff(wantUnsupported, h.Unsupported); d != "" {
					t.Errorf("header unsupported (-want +got):\n%s", d)
				}
			}
			no := map[string]bool{}
			for _, n := range tc.unsupported {
				no[n] = true
			}
			first := got.samples[0].Time
			rate := map[string]bool{"power_throttle_pct": true, "thermal_throttle_pct": true}
			for _, m := range record.Catalogue {
				if m.Set == record.SetGPM || m.Set == record.SetNVLink || (m.Set == record.SetPCIe && tc.model == "h100") {
					rate[m.Name] = !no[m.Name]
				}
			}
			for _, s := range got.samples {
				if s.Time.Equal(first) {
					// a rate has no earlier reading to start from
					var want []string
					for _, n := range all {
						if rate[n] {
							want = append(want, n+": "+gpu.NoEarlier)
							delete(s.Metrics, n)
						}
					}
					if d := cmp.Diff(sortedStrings(want), sortedStrings(s.Missing)); d != "" {
						t.Errorf("first sample's missing (-want +got):\n%s", d)
					}
					continue
				}
				for _, n := range all {
					_, has := s.Metrics[n]
					if has == no[n] {
						t.Fatalf("%s at %s: %s present %v, unsupported %v (metrics %v)", s.UUID, s.Time, n, has, no[n], s.Metrics)
					}
				}
				for _, m := range s.Missing {
					t.Errorf("%s at %s: missing %q", s.UUID, s.Time, m)
				}
			}
			last := got.samples[len(got.samples)-1]
			if last.Index != 1 {
				last = got.samples[len(got.samples)-2]
			}
			busy := got.samples[len(got.samples)-2]
			if busy.Index != 0 {
				busy = got.samples[len(got.samples)-1]
			}
			// Busy(80): SM activity is 0.9 × utilization in the simulator,
			// NVLink 3e9 B/s per percent... each read from its own source
			checks := map[string]float64{"mem_clock_mhz": 2619, "graphics_clock_mhz": 1980, "nvlink_tx_bytes_per_s": 80 * 3e9,
				"pcie_rx_bytes_per_s": 80 * 1e8, "power_throttle_pct": 0, "ecc_dbe_volatile": 0}
			if tc.model == "h100" {
				checks["sm_active_pct"] = 72
				checks["tensor_active_pct"] = 48
			}
			for n, want := range checks {
				if got := busy.Metrics[n]; !near(got, want, 0.01) {
					t.Errorf("busy GPU %s = %v, want %v", n, got, want)
				}
			}
			if got := last.Metrics["nvlink_tx_bytes_per_s"]; got != 0 {
				t.Errorf("idle GPU nvlink_tx_bytes_per_s = %v, want 0", got)
			}
		})
	}
}

func near(got, want, rel float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= rel*max(want, 1)
}

func sortedStrings(l []string) []string {
	out := append([]string(nil), l...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Xid and ECC errors reported through the event set, and a thermal
// slowdown starting and ending, each become a gpuevent record naming the
// job on the GPU, and are counted in /metrics.
func TestGPUEvents(t *testing.T) {
	e := newEnv(t, 2, nil)
	t0 := e.clk.Now()
	e.sim.Device(0).SetWorkload(sim.Throttled(sim.Busy(90, 100), nvml.ClocksEventReasonSwThermalSlowdown, t0.Add(2*time.Second), t0.Add(4*time.Second)))
	e.cgroup(100, 7)
	e.event(record.JobStart, 7, 0)
	e.cycles(1)
	e.sim.Device(0).InjectXID(79)
	e.sim.Device(1).InjectECC(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.cycles(1)
		m := scrape(t, e.a)
		if strings.Contains(m, `gpusuite_gpu_xid_errors_total{code="79",gpu="0"`) && strings.Contains(m, `gpusuite_gpu_ecc_error_events_total{gpu="1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events not counted within 10 s:\n%s", m)
		}
		time.Sleep(10 * time.Millisecond) // let the watch's goroutine hand them over
	}
	e.cycles(5)
	e.stopAndShip()
	got := e.arrived()
	type ev struct {
		Kind   record.GPUEventKind
		UUID   string
		Code   uint64
		Reason string
		Jobs   []record.JobRef
	}
	var evs []ev
	for _, g := range got.gpuEvents {
		if g.Schema != record.GPUEventSchema || g.Key != record.GPUEventKey(g.Cluster, g.Node, g.UUID, g.Time, g.Kind, g.Code, g.Reason) {
			t.Errorf("event %+v: bad schema or key", g)
		}
		evs = append(evs, ev{g.Kind, g.UUID, g.Code, g.Reason, g.Jobs})
	}
	u0, u1 := sim.UUID(testNode, 0), sim.UUID(testNode, 1)
	job := []record.JobRef{{Job: 7}}
	want := []ev{
		{record.GPUXid, u0, 79, "", job},
		{record.GPUECCDouble, u1, 0, "", nil},
		{record.GPUThrottleStart, u0, 0, record.ThrottleThermal, job},
		{record.GPUThrottleEnd, u0, 0, record.ThrottleThermal, job},
	}
	sortEv := func(l []ev) {
		for i := range l {
			for j := i + 1; j < len(l); j++ {
				if string(l[j].Kind)+l[j].UUID < string(l[i].Kind)+l[i].UUID {
					l[i], l[j] = l[j], l[i]
				}
			}
		}
	}
	sortEv(evs)
	sortEv(want)
	if d := cmp.Diff(want, evs); d != "" {
		t.Errorf("GPU events (-want +got):\n%s", d)
	}
	var xid *uint64
	for _, s := range got.samples {
		if s.UUID == u0 {
			xid = s.XIDErrors
		}
	}
	if xid == nil || *xid != 1 {
		t.Errorf("last sample of GPU 0 counts %v Xids, want 1", xid)
	}
}
