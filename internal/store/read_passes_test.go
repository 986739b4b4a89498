package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNodes(t *testing.T) {
	ctx := context.Background()
	s := readFixture(t)
	nodes, err := s.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]NodeRow{{1, "c1", "n1"}, {2, "c1", "n2"}}, nodes); diff != "" {
		t.Errorf("Nodes (-want +got):\n%s", diff)
	}
	seen, err := s.NodesSeen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]NodeSeen{{1, pi(1000), pi(1100)}, {2, nil, pi(900)}}, seen); diff != "" {
		t.Errorf("NodesSeen (-want +got):\n%s", diff)
	}
}

// passFigures is everything check reads about passes, in one value.
type passFigures struct {
	LastGood               *int64
	Last                   PassRow
	LastFound              bool
	Started1, Started3     *int64
	Left                   int64
	OldestLeft             *int64
	LeftFound              bool
	Quarantined, Refused   int64
	NoStart, NoStartBefore int64
}

func readPasses(t *testing.T, s *Ledger, since, before int64) passFigures {
	t.Helper()
	ctx := context.Background()
	var f passFigures
	var err error
	must := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatal(e)
		}
	}
	f.LastGood, err = s.LastGoodPass(ctx)
	must(err)
	f.Last, f.LastFound, err = s.LastPass(ctx)
	must(err)
	f.Started1, err = s.PassStarted(ctx, 1)
	must(err)
	f.Started3, err = s.PassStarted(ctx, 3)
	must(err)
	f.Left, f.OldestLeft, f.LeftFound, err = s.LastPassLeft(ctx)
	must(err)
	f.Quarantined, f.Refused, err = s.PassCounts(ctx, since)
	must(err)
	f.NoStart, err = s.JobsWithoutStart(ctx, before)
	must(err)
	f.NoStartBefore, err = s.JobsWithoutStart(ctx, 5000)
	must(err)
	return f
}

func TestPasses(t *testing.T) {
	for _, tc := range []struct {
		name          string
		s             *Ledger
		since, before int64
		want          passFigures
	}{
		{"ledger", readFixture(t), 0, 6000, passFigures{
			LastGood: pi(1010), Last: PassRow{Started: 2000, Finished: pi(2005), Error: "disk full\n\t\t and more"}, LastFound: true,
			Started1: pi(2000), Left: 3, OldestLeft: pi(1500), LeftFound: true, Quarantined: 2, Refused: 4, NoStart: 1,
		}},
		{"since the second pass", readFixture(t), 1500, 6000, passFigures{
			LastGood: pi(1010), Last: PassRow{Started: 2000, Finished: pi(2005), Error: "disk full\n\t\t and more"}, LastFound: true,
			Started1: pi(2000), Left: 3, OldestLeft: pi(1500), LeftFound: true, Refused: 3, NoStart: 1,
		}},
		{"empty", emptyStore(t), 0, 6000, passFigures{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readPasses(t, tc.s, tc.since, tc.before)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
