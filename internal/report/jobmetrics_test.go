package report

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// TestEventNotes: a job's GPU events in words: an Xid with its meaning
// and how soon the job failed after it, throttling as an interval (one
// that began before the job runs from its start), ECC errors, times in
// the zone asked.
func TestEventNotes(t *testing.T) {
	start := time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)
	end := start.Add(2*time.Minute + 14*time.Second).Unix()
	det := &Detail{Job: JobRow{Start: start.Unix(), End: &end, State: "failed"}}
	idx := int64(2)
	g := GPUStat{Node: "gpu01", Index: &idx, UUID: "GPU-a", gpuID: 7}
	det.GPUs = []GPUStat{g}
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	evs := []store.GPUEventRow{
		{GPUID: 7, Time: at(5), Kind: "throttle_start", Reason: "power"},
		{GPUID: 7, Time: at(9), Kind: "throttle_end", Reason: "thermal"},
		{GPUID: 7, Time: at(60), Kind: "ecc_single"},
		{GPUID: 7, Time: at(190), Kind: "throttle_end", Reason: "power"},
		{GPUID: 7, Time: at(131), Kind: "xid", Code: 79, Suppressed: 3},
		{GPUID: 7, Time: at(132), Kind: "xid", Code: 1000},
	}
	det.Events = jobEvents(det, map[int64]*GPUStat{7: &det.GPUs[0]}, evs)
	want := []string{
		"GPU 2 on gpu01: power throttling 14:00:05–14:03:10 (3m5s).",
		"GPU 2 on gpu01: thermal throttling 14:00:00–14:00:09 (9s).",
		"GPU 2 on gpu01: corrected (single-bit) ECC error at 14:01:00.",
		"GPU 2 on gpu01: Xid 79 (GPU has fallen off the bus) at 14:02:11; the job failed 3s later; 3 more events before it not recorded (a storm).",
		"GPU 2 on gpu01: Xid 1000 at 14:02:12; the job failed 2s later.",
	}
	if d := cmp.Diff(want, det.EventNotes(time.UTC)); d != "" {
		t.Errorf("notes (-want +got):\n%s", d)
	}
	tokyo := time.FixedZone("JST", 9*3600)
	if got := det.EventNotes(tokyo)[0]; !strings.Contains(got, "23:00:05–23:03:10") {
		t.Errorf("note in JST: %q", got)
	}
}

// TestHumanMetric: values in their units without float noise.
func TestHumanMetric(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		want string
	}{
		{"sm_active_pct", 78.349, "78.3 %"},
		{"nvlink_tx_bytes_per_s", 1.234e11, "123.4 GB/s"},
		{"graphics_clock_mhz", 1410, "1410 MHz"},
		{"power_w", 756.5999999999998, "756.6 W"},
		{"energy_mj", 123456789, "123.457 kJ"},
		{"energy_mj", 512000, "512 J"},
		{"mem_used_mib", 12595.2, "12.3 GiB"},
		{"mem_temp_c", 71.2, "71 °C"},
		{"ecc_sbe_volatile", 3, "3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := HumanMetric(tc.name, tc.v); got != tc.want {
				t.Errorf("HumanMetric(%s, %v) = %q, want %q", tc.name, tc.v, got, tc.want)
			}
		})
	}
	if got := Decimal(756.5999999999998, 3); got != "756.6" {
		t.Errorf("Decimal = %q, want 756.6", got)
	}
}
