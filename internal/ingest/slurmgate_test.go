package ingest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestSlurmGate: after a failed call no call is made for slurmQuiet, a
// call the daemon's stop cut short is no failure, and the account tree
// (the start of a facts round) is read at most every slurmFactsEvery
// while other calls go through.
func TestSlurmGate(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	down := errors.New("slurmdbd unreachable")
	tree := accountTreeArgs()
	event := []string{"-P", "-n", "show", "event"}
	type step struct {
		at       time.Duration
		prog     string
		args     []string
		fails    error // what the call returns, if made
		canceled bool  // the caller's context is cancelled
		called   bool  // want: the call was made
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a failure quiets both for a minute", []step{
			{0, "sacct", nil, down, false, true},
			{time.Second, "sacct", nil, nil, false, false},
			{30 * time.Second, "sacctmgr", tree, nil, false, false},
			{slurmQuiet, "sacctmgr", event, nil, false, true},
			{slurmQuiet, "sacct", nil, nil, false, true},
		}},
		{"a stop is no failure", []step{
			{0, "sacct", nil, context.Canceled, true, true},
			{time.Second, "sacct", nil, nil, false, true},
		}},
		{"facts every five minutes", []step{
			{0, "sacctmgr", tree, nil, false, true},
			{time.Second, "sacctmgr", event, nil, false, true},
			{30 * time.Second, "sacctmgr", tree, nil, false, false},
			{30 * time.Second, "sacct", nil, nil, false, true},
			{slurmFactsEvery, "sacctmgr", tree, nil, false, true},
		}},
		{"a failed tree read is asked again after the quiet", []step{
			{0, "sacctmgr", tree, down, false, true},
			{slurmQuiet, "sacctmgr", tree, nil, false, true},
		}},
		{"nil stays nil", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			g := newSlurmGate(func() time.Time { return now })
			if g.guard("sacct", nil) != nil {
				t.Fatal("a nil func was wrapped: ingest would ask a Slurm it was told not to")
			}
			for i, st := range tc.steps {
				now = t0.Add(st.at)
				called := false
				f := g.guard(st.prog, func(ctx context.Context, args ...string) ([]byte, error) {
					called = true
					return nil, st.fails
				})
				ctx, cancel := context.WithCancel(context.Background())
				if st.canceled {
					cancel()
				}
				_, err := f(ctx, st.args...)
				cancel()
				if called != st.called {
					t.Errorf("step %d: called %v, want %v", i, called, st.called)
				}
				if !called && !errors.Is(err, errSlurmSkipped) {
					t.Errorf("step %d: skipped with %v, want errSlurmSkipped", i, err)
				}
			}
		})
	}
}

// TestPassesBehindSlurmGate: over passes, a failed sacct call leaves the
// rest of the pass and the next (within slurmQuiet) without Slurm calls,
// sacctmgr included; Slurm's facts are read once, then not before
// slurmFactsEvery, except the cluster's facts while a backfill is behind.
func TestPassesBehindSlurmGate(t *testing.T) {
	type calls struct{ Sacct, Tree, Facts int }
	type step struct {
		at   time.Duration
		fail bool
		want calls
	}
	s0 := t0.Add(time.Minute)
	start := s0.Add(time.Hour)
	tests := []struct {
		name     string
		caughtUp bool // c1's facts (the ledger's one cluster) were read up to an hour ago
		steps    []step
	}{
		{"caught up", true, []step{
			{0, true, calls{1, 0, 0}},                            // details failed: nothing more
			{30 * time.Second, false, calls{0, 0, 0}},            // still quiet
			{slurmQuiet, false, calls{2, 1, 2}},                  // details, times; the tree, events and reservations
			{slurmQuiet + 30*time.Second, false, calls{2, 0, 0}}, // facts fresh; sacct knew no job: asked again
			{slurmQuiet + slurmFactsEvery, false, calls{2, 1, 2}},
		}},
		{"backfill", false, []step{
			{0, false, calls{2, 1, 4}},                // the facts up to now, and a month back
			{30 * time.Second, false, calls{2, 0, 4}}, // the tree is fresh, the backfill goes on
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			defer s.Close()
			e.put(t, evFileIn(t, "c1", "g01", 400, record.JobStart, s0), evFileIn(t, "c1", "g01", 400, record.JobEnd, s0.Add(10*time.Minute)))
			if tc.caughtUp {
				b, err := s.Begin(context.Background(), start)
				if err != nil {
					t.Fatal(err)
				}
				mark, back := start.Add(-time.Hour), start.Add(-clusterFactsBackfill).Unix()
				if err := b.SetClusterFacts(store.ClusterFacts{From: mark.Add(-time.Hour).Unix(), To: mark.Unix(), Clusters: []string{"c1"},
					Marks: &store.FactsMarks{Read: mark.Unix(), Back: back, Until: back}}); err != nil {
					t.Fatal(err)
				}
				if err := b.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			now := start
			gate := newSlurmGate(func() time.Time { return now })
			fail := false
			var got calls
			sacct := gate.guard("sacct", func(ctx context.Context, args ...string) ([]byte, error) {
				got.Sacct++
				if fail {
					return nil, errors.New("slurmdbd unreachable")
				}
				return nil, nil
			})
			sacctmgr := gate.guard("sacctmgr", func(ctx context.Context, args ...string) ([]byte, error) {
				if strings.Contains(strings.Join(args, " "), "show associations") {
					got.Tree++
				} else {
					got.Facts++
				}
				return nil, nil
			})
			for _, st := range tc.steps {
				now, fail, got = start.Add(st.at), st.fail, calls{}
				in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
					Sacct: sacct, Sacctmgr: sacctmgr, SacctLocation: time.UTC})
				if _, err := in.Pass(context.Background()); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(st.want, got); diff != "" {
					t.Errorf("pass at +%v: calls (-want +got):\n%s", st.at, diff)
				}
			}
		})
	}
}
