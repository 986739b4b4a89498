package sim

import (
	"math"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
)

// TestGpmMetricsGet: over a steady profile, each GPM metric is its field
// of the Profile (bandwidths in MiB/s); a metric the simulator does not
// know is NaN and not supported.
func TestGpmMetricsGet(t *testing.T) {
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	srv, err := New(Options{Node: "n1", Count: 1, Model: "h100", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	p := Profile{SMActivePct: 61, SMOccupancyPct: 42, TensorPct: 33, FP64Pct: 4, FP32Pct: 25, FP16Pct: 16, DRAMPct: 57,
		PCIeTxBps: 3 << 30, PCIeRxBps: 5 << 29, NVLinkTxBps: 7 << 30, NVLinkRxBps: 9 << 28}
	d := srv.Device(0)
	d.SetWorkload(Constant(Load{GPUUtil: 80, Profile: &p}))
	a, _ := srv.GpmSampleAlloc()
	b, _ := srv.GpmSampleAlloc()
	if r := d.GpmSampleGet(a); r != nvml.SUCCESS {
		t.Fatalf("first sample: %v", r)
	}
	now = now.Add(10 * time.Second)
	if r := d.GpmSampleGet(b); r != nvml.SUCCESS {
		t.Fatalf("second sample: %v", r)
	}
	ids := []nvml.GpmMetricId{nvml.GPM_METRIC_SM_UTIL, nvml.GPM_METRIC_SM_OCCUPANCY, nvml.GPM_METRIC_ANY_TENSOR_UTIL,
		nvml.GPM_METRIC_FP64_UTIL, nvml.GPM_METRIC_FP32_UTIL, nvml.GPM_METRIC_FP16_UTIL, nvml.GPM_METRIC_DRAM_BW_UTIL,
		nvml.GPM_METRIC_PCIE_TX_PER_SEC, nvml.GPM_METRIC_PCIE_RX_PER_SEC, nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
		nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, nvml.GPM_METRIC_INTEGER_UTIL}
	m := nvml.GpmMetricsGetType{NumMetrics: uint32(len(ids)), Sample1: a, Sample2: b}
	for i, id := range ids {
		m.Metrics[i].MetricId = uint32(id)
	}
	if r := srv.GpmMetricsGet(&m); r != nvml.SUCCESS {
		t.Fatalf("GpmMetricsGet: %v", r)
	}
	var got []float64
	for i := range ids {
		v := m.Metrics[i].Value
		if m.Metrics[i].NvmlReturn != uint32(nvml.SUCCESS) {
			v = -1 // not supported
			if !math.IsNaN(m.Metrics[i].Value) {
				t.Errorf("metric %d: unsupported but %v, want NaN", ids[i], m.Metrics[i].Value)
			}
		}
		got = append(got, math.Round(v*1e6)/1e6)
	}
	want := []float64{61, 42, 33, 4, 25, 16, 57, 3 << 10, 5 << 9, 7 << 10, 9 << 8, -1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
