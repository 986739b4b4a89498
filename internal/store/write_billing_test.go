package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// billed is each rollup table's billing (and the job totals'), summed.
func billed(t *testing.T, s *Ledger) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, tbl := range []string{"job_hours", "rollup_hourly", "rollup_hourly_sum", "rollup_daily", "rollup_monthly", "jobs"} {
		var v float64
		if err := s.db.QueryRow(`SELECT coalesce(sum(billing), 0) FROM ` + tbl).Scan(&v); err != nil {
			t.Fatal(err)
		}
		out[tbl] = v
	}
	return out
}

func allBilled(v float64) map[string]float64 {
	out := map[string]float64{}
	for _, tbl := range []string{"job_hours", "rollup_hourly", "rollup_hourly_sum", "rollup_daily", "rollup_monthly", "jobs"} {
		out[tbl] = v
	}
	return out
}

// jobEv is ev for job id on node.
func jobEv(kind record.Kind, id uint64, node string, at time.Time, gpus int) *record.Event {
	e := ev(kind, node, at, gpus)
	e.Job.ID = id
	e.Key = record.EventKey("c", id, 0, node, kind)
	return e
}

// TestBillingRollups: a job of 2 + 4 GPUs for 90 minutes is billed as the
// weights in force at its start say, then as Slurm billed it; its billing
// follows it when ignored; a weight changed between two jobs bills each
// at its own.
func TestBillingRollups(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	end := t0.Add(90 * time.Minute)
	for _, tc := range []struct {
		name    string
		weights []BillingWeights // set an hour before t0
		slurm   float64          // SetSlurmBilling's, 0: none
		want    float64
	}{
		{"no weights", nil, 0, 0},
		{"GPU weight", []BillingWeights{{Partition: "gpu", Weights: "CPU=1.0,GRES/gpu=2.0"}}, 0, 2 * 6 * 5400},
		{"other partition's weight", []BillingWeights{{Partition: "cpu", Weights: "GRES/gpu=2.0"}}, 0, 0},
		{"MAX_TRES", []BillingWeights{{Partition: "gpu", Weights: "CPU=1.0,GRES/gpu=2.0", MaxTRES: true}}, 0, (2*2 + 2*4) * 5400},
		{"Slurm's billing", []BillingWeights{{Partition: "gpu", Weights: "GRES/gpu=2.0"}}, 15, 15 * 5400},
		{"Slurm's billing without weights", []BillingWeights{{Partition: "gpu", Weights: ""}}, 15, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			now := end.Add(time.Hour)
			if tc.weights != nil {
				batchOf(t, s, now, func(b *Batch) error {
					return b.SetBillingWeights("c", BillingSlurm, t0.Add(-time.Hour).Unix(), tc.weights)
				})
			}
			batchOf(t, s, now, func(b *Batch) error {
				for _, e := range []*record.Event{jobEv(record.JobStart, 5, "n1", t0, 2), jobEv(record.JobStart, 5, "n2", t0, 4),
					jobEv(record.JobEnd, 5, "n1", end, 2), jobEv(record.JobEnd, 5, "n2", end, 4)} {
					if err := b.Event(e); err != nil {
						return err
					}
				}
				return nil
			})
			var job int64
			if err := s.db.QueryRow(`SELECT id FROM jobs WHERE job_id = 5`).Scan(&job); err != nil {
				t.Fatal(err)
			}
			if tc.slurm > 0 {
				batchOf(t, s, now, func(b *Batch) error { return b.SetSlurmBilling(job, tc.slurm) })
			}
			if d := cmp.Diff(allBilled(tc.want), billed(t, s)); d != "" {
				t.Errorf("billing (-want +got):\n%s", d)
			}
			batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, true, "test") })
			var ignored float64
			if err := s.db.QueryRow(`SELECT coalesce(sum(billing), 0) FROM rollup_daily WHERE ignored = 1`).Scan(&ignored); err != nil {
				t.Fatal(err)
			}
			if ignored != tc.want {
				t.Errorf("ignored job's billing in rollup_daily %v, want %v", ignored, tc.want)
			}
			var facts float64
			err := s.Facts(context.Background(), FactQuery{Grain: Daily, From: t0.Add(-24 * time.Hour).Unix(), To: now.Add(24 * time.Hour).Unix()},
				func(r *FactRow) { facts += r.Billing })
			if err != nil {
				t.Fatal(err)
			}
			if facts != 0 {
				t.Errorf("an ignored job's billing in the facts: %v", facts)
			}
		})
	}
	t.Run("weight changed between two jobs", func(t *testing.T) {
		s := openTemp(t)
		t1 := t0.Add(2 * time.Hour)
		now := t1.Add(3 * time.Hour)
		batchOf(t, s, now, func(b *Batch) error {
			if err := b.SetBillingWeights("c", BillingSlurm, t0.Add(-time.Hour).Unix(), []BillingWeights{{Partition: "gpu", Weights: "GRES/gpu=2.0"}}); err != nil {
				return err
			}
			// Unchanged weights make no row.
			if err := b.SetBillingWeights("c", BillingSlurm, t0.Add(-time.Minute).Unix(), []BillingWeights{{Partition: "gpu", Weights: "GRES/gpu=2.0"}}); err != nil {
				return err
			}
			return b.SetBillingWeights("c", BillingSlurm, t1.Add(-time.Minute).Unix(), []BillingWeights{{Partition: "gpu", Weights: "GRES/gpu=0.5"}})
		})
		batchOf(t, s, now, func(b *Batch) error {
			for _, e := range []*record.Event{jobEv(record.JobStart, 5, "n1", t0, 2), jobEv(record.JobEnd, 5, "n1", end, 2),
				jobEv(record.JobStart, 6, "n1", t1, 2), jobEv(record.JobEnd, 6, "n1", t1.Add(90*time.Minute), 2)} {
				if err := b.Event(e); err != nil {
					return err
				}
			}
			return nil
		})
		got := map[uint64]float64{}
		rows, err := s.db.Query(`SELECT job_id, billing FROM jobs`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id uint64
			var v float64
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			got[id] = v
		}
		if d := cmp.Diff(map[uint64]float64{5: 2 * 2 * 5400, 6: 0.5 * 2 * 5400}, got); d != "" {
			t.Errorf("jobs' billing (-want +got):\n%s", d)
		}
		var n int
		s.db.QueryRow(`SELECT count(*) FROM billing_weights`).Scan(&n)
		if n != 2 {
			t.Errorf("%d rows of weights' history, want 2 (a change each)", n)
		}
	})
}
