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
)

func TestSource(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), live("n1", gpu(0), gpu(0), gpu(90, 7)))
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
