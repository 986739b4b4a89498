package sim

import (
	"sync/atomic"
	"testing"
	"time"
)

// A GPU programmed with SetLoad draws exactly what the same load played
// second by second (SetWorkload) draws, over spans of whole and broken
// seconds, before and after a reset: the simulated clusters' ground
// truth holds each joule to it.
func TestSetLoadDrawsAsSteps(t *testing.T) {
	var ns atomic.Int64
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	ns.Store(start.UnixNano())
	srv, err := New(Options{Node: "n1", Count: 2, Model: "h100", Now: func() time.Time { return time.Unix(0, ns.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	l := Load{GPUUtil: 0, PowerMW: 72_345, TempC: 35, SMClockMHz: 345}
	stepped, steady := srv.Device(0), srv.Device(1)
	stepped.SetWorkload(Constant(l))
	steady.SetLoad(l)
	read := func(d *Device) uint64 {
		e, ret := d.GetTotalEnergyConsumption()
		if ret != 0 {
			t.Fatalf("energy: %v", ret)
		}
		return e
	}
	base := [2]uint64{read(stepped), read(steady)}
	for i, span := range []time.Duration{time.Second, 1500 * time.Millisecond, 7 * time.Second, 3*time.Hour + 250*time.Millisecond, 333 * time.Microsecond, 14 * 24 * time.Hour} {
		if i == 3 {
			stepped.ResetEnergy()
			steady.ResetEnergy()
			base = [2]uint64{0, 0}
		}
		ns.Add(int64(span))
		a, b := read(stepped)-base[0], read(steady)-base[1]
		if a != b || a == 0 && span >= time.Second {
			t.Fatalf("after %s more: stepped drew %d mJ, steady %d mJ", span, a, b)
		}
	}
}
