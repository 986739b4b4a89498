package gpu

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/sim"
)

func TestCall(t *testing.T) {
	ctx := context.Background()
	v, err := Call(ctx, time.Second, "ok", func() (int, nvml.Return) { return 7, nvml.SUCCESS })
	if err != nil || v != 7 {
		t.Fatalf("got %d, %v", v, err)
	}
	_, err = Call(ctx, time.Second, "lost", func() (int, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST })
	var ne *Error
	if !errors.As(err, &ne) || ne.Ret != nvml.ERROR_GPU_IS_LOST || err.Error() != "lost: ERROR_GPU_IS_LOST" {
		t.Fatalf("err = %v", err)
	}
	block := make(chan struct{})
	defer close(block)
	start := time.Now()
	_, err = Call(ctx, 50*time.Millisecond, "hang", func() (int, nvml.Return) { <-block; return 0, nvml.SUCCESS })
	if !errors.Is(err, ErrTimeout) || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}

func TestIdentify(t *testing.T) {
	s, err := sim.New(sim.Options{Node: "n1", Count: 8, Model: "a100", Minors: []int{7, 6, 5, 4, 3, 2, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	lib, err := OpenInterface(context.Background(), s, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := lib.Identify(context.Background(), []int{0, 5, 9})
	if err != nil {
		t.Fatal(err)
	}
	if *ids[0].Index != 7 || ids[0].UUID != sim.UUID("n1", 7) || *ids[1].Index != 2 {
		t.Errorf("mapping: %+v %+v", ids[0], ids[1])
	}
	if ids[2].Index != nil || len(ids[2].Missing) != 1 {
		t.Errorf("minor 9 does not exist and must be flagged: %+v", ids[2])
	}
	if ids[0].Model != "NVIDIA A100-SXM4-80GB" && ids[0].Model == "" {
		t.Errorf("model %q", ids[0].Model)
	}
}

func TestOpenFailures(t *testing.T) {
	s, _ := sim.New(sim.Options{Count: 1, Model: "h100", Fail: true})
	if _, err := OpenInterface(context.Background(), s, time.Second); err == nil || err.Error() != "nvmlInit: ERROR_DRIVER_NOT_LOADED" {
		t.Errorf("err = %v", err)
	}
	slow, _ := sim.New(sim.Options{Count: 1, Model: "h100", InitDelay: time.Second})
	if _, err := OpenInterface(context.Background(), slow, 50*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("err = %v", err)
	}
	if _, err := sim.New(sim.Options{Count: 1, Model: "v100"}); err == nil {
		t.Error("unknown model accepted")
	}
}

func TestSimEnergyConsistentAcrossInstances(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a, _ := sim.New(sim.Options{Node: "n", Count: 1, Model: "h100", Now: clock})
	b, _ := sim.New(sim.Options{Node: "n", Count: 1, Model: "h100", Now: clock})
	ea, _ := a.Device(0).GetTotalEnergyConsumption()
	eb, _ := b.Device(0).GetTotalEnergyConsumption()
	if ea != eb || ea == 0 {
		t.Fatalf("idle counters differ across processes: %d vs %d", ea, eb)
	}
	now = now.Add(10 * time.Second)
	e2, _ := a.Device(0).GetTotalEnergyConsumption()
	if e2-ea != 700000 { // 70 W idle for 10 s = 700 J
		t.Errorf("energy delta %d mJ, want 700000", e2-ea)
	}
}
