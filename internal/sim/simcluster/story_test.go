package simcluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/store"
)

// A site adds tensor activity and NVLink traffic to agent.metrics (the gpm
// and nvlink sets), and the failing jobs' GPUs fall off the bus: through
// the real agent (simulated GPUs with GPM and an NVML event set), the
// real hooks, shipping and one real ingest pass, every job's detail shows
// the chosen metrics' means and peaks and its power, and every failing
// job, and no other, tells of its Xid 79 (seed 3 has a GPU taken by the
// next job within the minute after a failing job's Xid).
func TestJobStoryThroughTheAgent(t *testing.T) {
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	res, path, ir := ledger(t, simcluster.Options{Cluster: "sim", Nodes: 2, GPUsPerNode: 2, Start: start, Duration: 4 * time.Hour,
		JobsPerNode: 12, Seed: 3, Metrics: []string{"default", "gpm", "nvlink"}, XID: 79})
	if ir.Quarantined != 0 || ir.Refused != 0 {
		t.Fatalf("ingest quarantined %d and refused %d files: %+v", ir.Quarantined, ir.Refused, ir)
	}
	db, err := report.OpenDB(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := res.Truth.End.Add(time.Hour)
	failing, busy := 0, 0
	for _, j := range res.Truth.Jobs {
		det, err := db.Job(context.Background(), "sim", report.JobSpec{ID: int64(j.ID)}, now)
		if err != nil {
			t.Fatalf("job %d: %v", j.ID, err)
		}
		notes := strings.Join(det.EventNotes(time.UTC), "\n")
		xid := strings.Contains(notes, "Xid 79 (GPU has fallen off the bus)")
		switch {
		case j.Kind == simcluster.Failing && !xid:
			t.Errorf("failing job %d: no Xid 79 in its notes: %q (events %+v)", j.ID, notes, det.Events)
		case j.Kind != simcluster.Failing && xid:
			t.Errorf("job %d (kind %v) tells of another job's Xid: %q", j.ID, j.Kind, notes)
		}
		if j.Kind == simcluster.Failing {
			failing++
		}
		if len(det.GPUs) != len(j.GPUs) {
			t.Fatalf("job %d: %d GPUs in its detail, %d allocated", j.ID, len(det.GPUs), len(j.GPUs))
		}
		for _, g := range det.GPUs {
			if g.SampleS == 0 {
				continue // ended within its first interval
			}
			// The mean is the energy counter's difference over the job's
			// time (docs/reports.md), so it may pass the highest power
			// reading, which samples a second every interval: it is held
			// to what a GPU can draw.
			if g.PowerMeanW == nil || g.PowerPeakW == nil || *g.PowerPeakW <= 0 || *g.PowerMeanW <= 0 || *g.PowerMeanW*1000 > store.MaxGPUPowerMW {
				t.Errorf("job %d GPU %s: power mean %v peak %v", j.ID, g.UUID, g.PowerMeanW, g.PowerPeakW)
			}
			got := map[string]report.MetricStat{}
			for _, m := range g.Metrics {
				got[m.Name] = m
			}
			for _, name := range []string{"tensor_active_pct", "sm_active_pct", "nvlink_tx_bytes_per_s", "nvlink_rx_bytes_per_s"} {
				m, ok := got[name]
				if !ok || m.Unsupported != "" {
					t.Errorf("job %d GPU %s: %s missing from its metrics (%+v)", j.ID, g.UUID, name, g.Metrics)
					continue
				}
				if m.Mean == nil || m.Peak == nil {
					t.Errorf("job %d GPU %s: %s without mean or peak: %+v", j.ID, g.UUID, name, m)
					continue
				}
				// the mean is a sum over seconds: it may pass a constant
				// peak by a rounding
				if *m.Peak < *m.Mean*(1-1e-9) || *m.Mean < 0 {
					t.Errorf("job %d GPU %s: %s mean %g peak %g", j.ID, g.UUID, name, *m.Mean, *m.Peak)
				}
				if j.Kind == simcluster.Busy && strings.HasSuffix(name, "_pct") && *m.Peak <= 0 {
					t.Errorf("busy job %d GPU %s: %s peak %v, want above 0", j.ID, g.UUID, name, *m.Peak)
				}
			}
			if j.Kind == simcluster.Busy {
				busy++
			}
		}
	}
	if failing == 0 || busy == 0 {
		t.Fatalf("the simulated hours held %d failing jobs and %d busy GPUs: want some of each", failing, busy)
	}
	t.Logf("%d jobs, %d failing with their Xid, %d busy GPUs with their metrics", len(res.Truth.Jobs), failing, busy)
}
