package board

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

func TestSource(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1", gpu(0), gpu(0), gpu(90, 7)))
	one := 1
	clock := now
	var slurmCalls atomic.Int32
	slurmFails := false
	src := NewSource(SourceOptions{
		LiveDir: dir,
		Slurm: func(ctx context.Context) (slurmstate.State, error) {
			slurmCalls.Add(1)
			if slurmFails {
				return slurmstate.State{}, errors.New("scontrol: timed out")
			}
			return *slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 3)}), nil
		},
		Notes: func(ctx context.Context, at time.Time) ([]Note, error) {
			return []Note{{ID: 4, Node: "n1", GPU: &one, Until: at.Add(time.Hour), Text: "<b>mine</b>", Author: "bob"}}, nil
		},
		Now: func() time.Time { return clock },
	})
	ctx := context.Background()

	s := src.Current(ctx)
	if s.Board.Slurm || s.Meta.SlurmError != "not read yet" {
		t.Errorf("before any read: slurm %v, error %q", s.Board.Slurm, s.Meta.SlurmError)
	}
	src.RefreshSlurm(ctx)
	if got := src.Current(ctx); got != s {
		t.Error("a board younger than MaxAge was rebuilt")
	}
	clock = clock.Add(time.Second)
	s = src.Current(ctx)
	if !s.Board.Slurm || s.Meta.SlurmError != "" {
		t.Fatalf("after a read: slurm %v, error %q", s.Board.Slurm, s.Meta.SlurmError)
	}
	var states []State
	for _, g := range s.Board.Nodes[0].GPUs {
		states = append(states, g.State)
	}
	if diff := cmp.Diff([]State{Free, Booked, Busy}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if s.Board.Totals.Booked != 1 || s.Board.Nodes[0].GPUs[1].Notes[0].Text != "<b>mine</b>" {
		t.Errorf("booked %d, notes %+v", s.Board.Totals.Booked, s.Board.Nodes[0].GPUs[1].Notes)
	}

	slurmFails = true
	src.RefreshSlurm(ctx)
	clock = clock.Add(time.Second)
	s = src.Current(ctx)
	if s.Board.Slurm || s.Meta.SlurmError != "scontrol: timed out" {
		t.Errorf("after a failed read: slurm %v, error %q (an old view must not be kept)", s.Board.Slurm, s.Meta.SlurmError)
	}
	if calls := slurmCalls.Load(); calls != 2 {
		t.Errorf("Slurm read %d times by 2 refreshes and 4 boards, want 2", calls)
	}
}

func TestSourceRunStopsWithContext(t *testing.T) {
	read := make(chan struct{}, 10)
	src := NewSource(SourceOptions{LiveDir: t.TempDir(), SlurmInterval: time.Hour,
		Slurm: func(ctx context.Context) (slurmstate.State, error) {
			read <- struct{}{}
			return slurmstate.State{}, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { src.Run(ctx); close(done) }()
	select {
	case <-read:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not read Slurm at once")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestSourceCallerCancelKeepsNotes: a viewer leaving mid-build must not
// leave every viewer a board without its notes.
func TestSourceCallerCancelKeepsNotes(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1", gpu(0)))
	started, release := make(chan struct{}), make(chan struct{})
	var sawDeadline atomic.Bool
	src := NewSource(SourceOptions{LiveDir: dir, MaxAge: time.Hour, BuildTimeout: time.Hour,
		Notes: func(ctx context.Context, at time.Time) ([]Note, error) {
			_, ok := ctx.Deadline()
			sawDeadline.Store(ok)
			close(started)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
			}
			return []Note{{ID: 1, Node: "n1", Until: at.Add(time.Hour)}}, nil
		},
		Now: func() time.Time { return now },
	})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *Snapshot, 1)
	go func() { got <- src.Current(ctx) }()
	<-started
	cancel()
	if s := <-got; !s.Old {
		t.Errorf("a cancelled asker got a board not marked old: %+v", s.Meta)
	}
	close(release)
	s := src.Current(context.Background())
	if s.Old || s.NotesError != "" || s.Board.Totals.Booked != 1 {
		t.Errorf("after the leaver: old %v, notes error %q, booked %d; want the notes kept", s.Old, s.NotesError, s.Board.Totals.Booked)
	}
	if !sawDeadline.Load() {
		t.Error("the notes were read without the source's deadline")
	}
}

// TestSourceHungBuild: a build that hangs (a hung /data) leaves askers
// the last board, marked old, and starts no second build beside it.
func TestSourceHungBuild(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1", gpu(0)))
	clock := now
	var calls atomic.Int32
	hang, release := make(chan struct{}, 1), make(chan struct{})
	src := NewSource(SourceOptions{LiveDir: dir, MaxAge: time.Second, BuildTimeout: time.Second,
		Notes: func(ctx context.Context, at time.Time) ([]Note, error) {
			calls.Add(1)
			select {
			case <-hang:
				<-release // ignores its context, as a read of a hung mount does
			default:
			}
			return nil, nil
		},
		Now: func() time.Time { return clock },
	})
	first := src.Current(context.Background())
	if first.Old {
		t.Fatal("first board old")
	}
	hang <- struct{}{}
	clock = clock.Add(2 * time.Second)
	// The first ask waits out the build deadline, the others leave first.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i, ctx := range []context.Context{context.Background(), gone, gone} {
		s := src.Current(ctx)
		if !s.Old || s.Board.At != first.Board.At {
			t.Errorf("ask %d during a hung build: old %v at %v, want the first board marked old", i, s.Old, s.Board.At)
		}
		if len(s.Meta.Problems) == 0 {
			t.Errorf("ask %d: an old board without a problem saying so", i)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d builds during one hung build, want none beside it (2 in all)", n)
	}
	close(release)
	// The hung build stores its board once it returns; the next ask after
	// MaxAge builds anew.
	deadline := time.Now().Add(30 * time.Second)
	for {
		clock = clock.Add(2 * time.Second)
		if s := src.Current(context.Background()); !s.Old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new board after the hung build returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSourceWaitersShareTheBuild: askers who come while a board is being
// built take that build when it ends, however long it took against
// MaxAge, rather than each building again in turn.
func TestSourceWaitersShareTheBuild(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1", gpu(0)))
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	var nowCalls, builds atomic.Int32
	block, started, release := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	src := NewSource(SourceOptions{LiveDir: dir, MaxAge: time.Second, BuildTimeout: time.Hour,
		Notes: func(ctx context.Context, at time.Time) ([]Note, error) {
			builds.Add(1)
			select {
			case <-block:
				close(started)
				<-release
			default:
			}
			return nil, nil
		},
		Now: func() time.Time {
			nowCalls.Add(1)
			return time.Unix(0, clock.Load()).UTC()
		},
	})
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	src.Current(context.Background())

	block <- struct{}{}
	advance(2 * time.Second) // the first board is past MaxAge
	const askers = 8
	got := make(chan *Snapshot, askers)
	go func() { got <- src.Current(context.Background()) }()
	<-started
	// Each later asker reads the clock once to find the held board old;
	// once all have, they wait behind the build in flight.
	base := nowCalls.Load()
	for range askers - 1 {
		go func() { got <- src.Current(context.Background()) }()
	}
	waitFor(t, "the askers to find the board old", func() bool { return nowCalls.Load() >= base+askers-1 })
	advance(2 * time.Second) // the build in flight ends past MaxAge too
	close(release)

	var first *Snapshot
	for i := range askers {
		s := <-got
		if s.Old {
			t.Errorf("asker %d got an old board: %+v", i, s.Meta.Problems)
		}
		if first == nil {
			first = s
		} else if s != first {
			t.Errorf("asker %d got the board of %v, another the board of %v; want one build for all", i, s.Board.At, first.Board.At)
		}
	}
	if n := builds.Load(); n != 2 {
		t.Errorf("%d builds for one board and %d askers at once, want 2 (one each)", n, askers)
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline (this is not a timing test).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, 30*time.Second, 5*time.Millisecond, cond)
}

// TestSourceCluster: the source builds the board of its own cluster.
func TestSourceCluster(t *testing.T) {
	src := NewSource(SourceOptions{LiveDir: t.TempDir(), Cluster: "c1",
		Slurm: func(ctx context.Context) (slurmstate.State, error) {
			return *slurm([]slurmstate.Node{snode("gpu03", slurmstate.Idle, 1)}), nil
		},
		Notes: func(ctx context.Context, at time.Time) ([]Note, error) {
			return []Note{{ID: 1, Cluster: "c2", Node: "gpu03"}, {ID: 2, Cluster: "c2", Node: "gpu09"}}, nil
		},
		Now: func() time.Time { return now },
	})
	src.RefreshSlurm(context.Background())
	s := src.Current(context.Background())
	if len(s.Board.Nodes) != 1 || s.Board.Nodes[0].Cluster != "c1" || len(s.Board.Nodes[0].Notes) != 0 {
		t.Errorf("nodes %+v: want gpu03 of c1 without c2's note", s.Board.Nodes)
	}
	if len(s.Meta.Problems) != 0 {
		t.Errorf("problems %v: c2's notes are c2's board's", s.Meta.Problems)
	}
}
