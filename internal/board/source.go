package board

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// Source keeps the board of a long-lived process (gpuacct serve): Slurm's
// view is re-read on a timer, never on a request, so no number of viewers
// makes more scontrol calls; the snapshots and notes are read when a board
// older than MaxAge is asked for, once for all who ask at that moment.
type Source struct {
	o SourceOptions

	slurmMu  sync.Mutex
	slurm    *slurmstate.State
	slurmErr string

	// buildMu is held while a board is built, so concurrent askers share
	// one build.
	buildMu sync.Mutex
	cur     *Snapshot
}

// SourceOptions configure a Source; zero fields take the defaults.
type SourceOptions struct {
	LiveDir string
	Limits  Limits
	// Slurm reads Slurm's view within the context's deadline; nil: Slurm
	// is not asked (the board says so).
	Slurm         func(ctx context.Context) (slurmstate.State, error)
	SlurmInterval time.Duration // default 30 s
	SlurmTimeout  time.Duration // default 10 s
	// Notes returns the notes in force at now; nil: none. An error is
	// shown on the board, which is built without notes.
	Notes func(ctx context.Context, now time.Time) ([]Note, error)
	// MaxAge is how long one built board is served (default 1 s).
	MaxAge time.Duration
	Now    func() time.Time
	Log    *slog.Logger
}

// Snapshot is one built board with how it was had.
type Snapshot struct {
	Board Board
	Meta  Meta
	// SlurmAsked is false when the source has no Slurm reader.
	SlurmAsked bool
	// NotesError is why the notes could not be read ("" when read).
	NotesError string
}

// NewSource returns a source; call Run to keep Slurm's view fresh.
func NewSource(o SourceOptions) *Source {
	if o.SlurmInterval <= 0 {
		o.SlurmInterval = 30 * time.Second
	}
	if o.SlurmTimeout <= 0 {
		o.SlurmTimeout = 10 * time.Second
	}
	if o.MaxAge <= 0 {
		o.MaxAge = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Source{o: o}
}

// Run reads Slurm's view at once and then every SlurmInterval until ctx
// ends. Without a Slurm reader it returns at once.
func (s *Source) Run(ctx context.Context) {
	if s.o.Slurm == nil {
		return
	}
	t := time.NewTicker(s.o.SlurmInterval)
	defer t.Stop()
	for {
		s.RefreshSlurm(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RefreshSlurm reads Slurm's view once, within SlurmTimeout. A failed
// read replaces the view held: a board must not show an old drain or
// reservation as if Slurm had just said so.
func (s *Source) RefreshSlurm(ctx context.Context) {
	if s.o.Slurm == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, s.o.SlurmTimeout)
	st, err := s.o.Slurm(rctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	s.slurmMu.Lock()
	defer s.slurmMu.Unlock()
	if err != nil {
		if s.slurmErr == "" {
			s.o.Log.Warn("cannot read Slurm's nodes and reservations; the board shows the agents' view alone", "err", err)
		}
		s.slurm, s.slurmErr = nil, err.Error()
		return
	}
	if s.slurmErr != "" {
		s.o.Log.Info("Slurm's nodes and reservations read again")
	}
	s.slurm, s.slurmErr = &st, ""
}

// Current returns a board built at most MaxAge ago. The snapshot is
// shared: callers must not change it.
func (s *Source) Current(ctx context.Context) *Snapshot {
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	now := s.o.Now()
	if s.cur != nil {
		if age := now.Sub(s.cur.Board.At); age >= 0 && age < s.o.MaxAge {
			return s.cur
		}
	}
	s.cur = s.build(ctx, now)
	return s.cur
}

func (s *Source) build(ctx context.Context, now time.Time) *Snapshot {
	lives, probs := Load(s.o.LiveDir, now, s.o.Limits)
	s.slurmMu.Lock()
	st, serr := s.slurm, s.slurmErr
	s.slurmMu.Unlock()
	snap := &Snapshot{SlurmAsked: s.o.Slurm != nil, Meta: Meta{SlurmError: serr, Problems: probs}}
	if snap.SlurmAsked && st == nil && serr == "" {
		snap.Meta.SlurmError = "not read yet"
	}
	var notes []Note
	if s.o.Notes != nil {
		n, err := s.o.Notes(ctx, now)
		if err != nil {
			snap.NotesError = err.Error()
		} else {
			notes = n
		}
	}
	snap.Board = Build(lives, st, notes, now)
	snap.Meta.Problems = append(snap.Meta.Problems, snap.Board.NoteProblems...)
	return snap
}
