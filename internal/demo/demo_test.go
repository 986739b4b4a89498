package demo

import (
	"context"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"
)

// Every simulated job is recorded at both ends, and the recorded
// allocation equals GPUs × elapsed, the accounting definition.
func TestSimulateRecordsEveryJob(t *testing.T) {
	start := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	jobs, err := Simulate(context.Background(), Options{Dir: t.TempDir(), Nodes: 2, GPUs: 4, Jobs: 40, Seed: 7, Start: start},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 40 {
		t.Fatalf("%d jobs recorded, want 40", len(jobs))
	}
	for _, j := range jobs {
		if j.Start.Key == "" || j.End.Key == "" {
			t.Fatalf("job %d lacks an event: %+v", j.Start.Job.ID, j)
		}
		el := j.End.Time.Sub(j.Start.Time)
		if el <= 0 || len(j.Start.GPUs) == 0 {
			t.Errorf("job %d: elapsed %s, %d GPUs", j.Start.Job.ID, el, len(j.Start.GPUs))
		}
		if got, want := j.AllocatedGPUSeconds(), float64(len(j.Start.GPUs))*el.Seconds(); math.Abs(got-want) > 1e-9 {
			t.Errorf("job %d: allocated %f, want %f", j.Start.Job.ID, got, want)
		}
		// Idle simulated H100s draw 70 W: energy is 70 W × GPUs × elapsed.
		if want := 70 * float64(len(j.Start.GPUs)) * el.Seconds() / 3.6e6; math.Abs(j.EnergyKWh()-want) > 1e-6 {
			t.Errorf("job %d: energy %f kWh, want %f", j.Start.Job.ID, j.EnergyKWh(), want)
		}
	}
}
