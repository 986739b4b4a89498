package agent

import (
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestJobWithoutSample: a job that starts and ends between two cycles
// has no sample, so the agent ships no aggregate for it (before, it
// shipped a final one whose first and last were zero, which ingest
// quarantined); its events, which carry the allocation, are shipped.
// internal/demo's TestJobShorterThanACycle ingests such a job.
func TestJobWithoutSample(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cyclesBefore int
	}{
		{name: "first thing the agent sees", cyclesBefore: 0},
		{name: "between two cycles", cyclesBefore: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, nil)
			e.cycles(tc.cyclesBefore)
			e.clk.Advance(200 * time.Millisecond)
			e.event(record.JobStart, 8, 1)
			if _, err := e.ship(); err != nil {
				t.Fatal(err)
			}
			e.clk.Advance(300 * time.Millisecond)
			e.event(record.JobEnd, 8, 1)
			if _, err := e.ship(); err != nil {
				t.Fatal(err)
			}
			e.cycles(2)
			e.stopAndShip()
			got := e.arrived()
			if len(got.events) != 2 {
				t.Errorf("%d events shipped, want the job's start and end", len(got.events))
			}
			for _, g := range got.allAggs {
				if g.Job == 8 {
					t.Errorf("aggregate of job 8, which has no sample: %+v", g)
				}
			}
			if left := spoolNames(t, e.cfg.Spool.Dir); len(left) != 0 {
				t.Errorf("spool keeps %v after shipping", left)
			}
		})
	}
}
