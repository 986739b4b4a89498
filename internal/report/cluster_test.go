package report

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// setClusterFacts writes Slurm's facts into the ledger at loc as ingest
// does.
func setClusterFacts(t *testing.T, loc string, f store.ClusterFacts) {
	t.Helper()
	o := store.At(loc)
	st, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), time.Unix(f.To, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetClusterFacts(f); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestClusterUtilization: known answers over two days of a cluster of
// two 4-GPU nodes, from jobs written as ingest writes them and Slurm's
// facts as sacctmgr lists them: a node drained for part of the window, a
// reservation with a job in it, a maintenance reservation, a third node
// added on the second day, an ignored job counted all the same; per day
// and in total, in the ledger's engine.
func TestClusterUtilization(t *testing.T) {
	day := int64(86400)
	d0 := t0
	jobs := []reportfixture.Job{
		// Day 1: 4 GPUs on n1 for 2 h; 2 GPUs on n2 for 1 h inside the
		// reservation (10:00-12:00 on n2).
		{ID: 1, User: "alice", Acct: "a", Part: "gpu", Node: "n1", GPUs: 4, Start: d0 + 3600, End: d0 + 3*3600},
		{ID: 2, User: "bob", Acct: "b", Part: "gpu", Node: "n2", GPUs: 2, Start: d0 + 10*3600 + 1800, End: d0 + 11*3600 + 1800},
		// Day 2: 1 GPU on n3 for 30 min, ignored in reports, not here.
		{ID: 3, User: "carol", Acct: "a", Part: "gpu", Node: "n3", GPUs: 1, Start: d0 + day + 600, End: d0 + day + 2400},
	}
	loc := reportfixture.BuildLedger(t, jobs, time.Unix(d0+2*day, 0))
	setClusterFacts(t, loc, store.ClusterFacts{From: d0 - day, To: d0 + 2*day,
		Events: []store.SlurmEvent{
			{Cluster: "c1", Start: d0 - day, End: d0 + day, GPUs: 8, Reason: "Cluster Registered TRES"},
			{Cluster: "c1", Start: d0 + day, GPUs: 12, Reason: "Cluster Registered TRES"},
			// n1 drained 20:00-22:30 on day 1.
			{Cluster: "c1", Node: "n1", Start: d0 + 20*3600, End: d0 + 22*3600 + 1800, State: 0x201, Reason: "fan", GPUs: 4},
			// another cluster's outage: not ours.
			{Cluster: "c2", Node: "x1", Start: d0, State: 1, GPUs: 4},
		},
		Reservations: []store.SlurmReservation{
			{Cluster: "c1", ID: 7, Name: "demo", Start: d0 + 10*3600, End: d0 + 12*3600, Nodes: "n2", GPUs: 4},
			{Cluster: "c1", ID: 8, Name: "maint", Start: d0 + day + 3600, End: d0 + day + 2*3600, Flags: "MAINT", Nodes: "n[1-2]", GPUs: 8},
		},
	})
	st, err := store.Open(context.Background(), store.At(loc))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Begin(context.Background(), time.Unix(d0+2*day, 0))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := b.JobRows("c1", "3")
	if err == nil && len(rows) != 1 {
		t.Fatalf("job 3: rows %v", rows)
	}
	if err == nil {
		err = b.SetIgnored(rows[0], true, "benchmark")
	}
	if err == nil {
		err = b.Commit()
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	db := openTest(t, loc)
	w := timespec.Window{Start: time.Unix(d0, 0).UTC(), End: time.Unix(d0+2*day, 0).UTC()}
	s, err := db.Scope(ScopeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	day1 := Utilization{
		Allocated: 4*7200 + 4*7200, // job 1; the reservation in full (job 2 inside it)
		Down:      4 * 9000,
		Reported:  8 * day,
		Reserved:  4*7200 - 2*3600,
	}
	day1.Idle = day1.Reported - day1.Allocated - day1.Down
	day2 := Utilization{Allocated: 1800, PlannedDown: 8 * 3600, Reported: 12 * day}
	day2.Idle = day2.Reported - day2.Allocated - day2.PlannedDown
	var total Utilization
	total.add(day1)
	total.add(day2)
	for _, c := range []struct {
		period timespec.Period
		want   []Utilization
	}{
		{timespec.Day, []Utilization{day1, day2}},
		{timespec.None, []Utilization{total}},
	} {
		t.Run(string(c.period), func(t *testing.T) {
			rows, err := db.ClusterUtilization(context.Background(), ClusterRequest{Window: w, Period: c.period, Scope: s})
			if err != nil {
				t.Fatal(err)
			}
			var got []Utilization
			for _, r := range rows {
				if r.Cluster != "c1" {
					t.Errorf("row of cluster %q", r.Cluster)
				}
				got = append(got, r.Utilization)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("utilization (-want +got):\n%s", d)
			}
		})
	}
	t.Run("hours after now are not counted", func(t *testing.T) {
		// Now in the first hour of day 2: that hour counts in full, the
		// maintenance reservation from 01:00 not at all.
		rows, err := db.ClusterUtilization(context.Background(), ClusterRequest{Window: w, Period: timespec.Day, Scope: s, Now: time.Unix(d0+day+1800, 0)})
		if err != nil {
			t.Fatal(err)
		}
		want := Utilization{Allocated: 1800, Idle: 12*3600 - 1800, Reported: 12 * 3600}
		if len(rows) != 2 {
			t.Fatalf("%d rows, want 2", len(rows))
		}
		if d := cmp.Diff(want, rows[1].Utilization); d != "" {
			t.Errorf("day 2 until now (-want +got):\n%s", d)
		}
	})
	t.Run("a request ended midway stops the hours", func(t *testing.T) {
		ctx := &endsLater{Context: context.Background(), left: 10}
		if _, err := db.ClusterUtilization(ctx, ClusterRequest{Window: w, Period: timespec.Day, Scope: s}); !errors.Is(err, context.Canceled) {
			t.Errorf("ClusterUtilization under a context ended after the reads: %v, want context.Canceled", err)
		}
	})
	if _, err := db.ClusterUtilization(context.Background(), ClusterRequest{Window: timespec.Window{Start: w.Start, End: w.Start.Add(6 * 366 * 24 * time.Hour)}, Scope: s}); !IsBadInput(err) {
		t.Errorf("a six-year window: %v, want a bad input", err)
	}
}

// endsLater is a context that the store's reads see as live (no Done
// channel) and whose Err says canceled from its left-th call on: a
// request cancelled while the hours are computed.
type endsLater struct {
	context.Context
	left int
}

func (c *endsLater) Done() <-chan struct{} { return nil }

func (c *endsLater) Err() error {
	if c.left--; c.left < 0 {
		return context.Canceled
	}
	return nil
}
