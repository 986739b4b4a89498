package agent

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAddEnergy: a counter's progress adds up; a reading a little lower
// than the last (older, arrived late: an epilog's reading taken while a
// cycle read the counter) adds nothing and leaves the later reading the
// baseline; one that fell to near zero was reset, and its whole value is
// the energy since.
func TestAddEnergy(t *testing.T) {
	const life = 1_993_338_804_869 // mJ: a counter that has run for months
	tests := []struct {
		name      string
		readings  []uint64
		want      uint64
		wantLast  uint64
		wantReset uint64
	}{
		{name: "steady", readings: []uint64{life, life + 70_000, life + 140_000}, want: 140_000, wantLast: life + 140_000},
		{name: "a late older reading", readings: []uint64{life, life + 70_000, life + 35_000, life + 140_000}, want: 140_000, wantLast: life + 140_000},
		{name: "late reading last", readings: []uint64{life, life + 70_000, life + 69_000}, want: 70_000, wantLast: life + 70_000},
		{name: "driver reload", readings: []uint64{life, life + 70_000, 5_000, 75_000}, want: 70_000 + 5_000 + 70_000, wantLast: 75_000, wantReset: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &aggState{}
			base := tt.readings[0]
			a.LastEnergy = &base // the prolog's reading
			for _, e := range tt.readings[1:] {
				a.addEnergy(e, 1)
			}
			got := []uint64{a.EnergyMJ, *a.LastEnergy, a.Quality["energy_counter_reset"]}
			if d := cmp.Diff([]uint64{tt.want, tt.wantLast, tt.wantReset}, got); d != "" {
				t.Errorf("energy, baseline, resets (-want +got):\n%s", d)
			}
		})
	}
}

// TestCycleSpacing: a cycle stamped less than half an interval after the
// last one (a clock stepped back, a tick caught up) records nothing, so
// that no two samples of a GPU overlap; the next on time records again.
func TestCycleSpacing(t *testing.T) {
	e := newEnv(t, 1, nil)
	base := e.clk.Now().UTC()
	for _, step := range []struct {
		at   time.Duration
		want int // samples of the GPU recorded so far
	}{
		{0, 1}, {400 * time.Millisecond, 1}, {-2 * time.Second, 1}, {time.Second, 2}, {1600 * time.Millisecond, 3},
	} {
		if err := e.a.cycleAt(context.Background(), base.Add(step.at)); err != nil {
			t.Fatal(err)
		}
		if got := int(testutil.ToFloat64(e.a.metrics.samples)); got != step.want {
			t.Errorf("after a cycle at +%s: %d samples, want %d", step.at, got, step.want)
		}
	}
}
