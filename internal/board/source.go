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

	// building holds one token while a board is built, so concurrent
	// askers share one build and a waiter can give up (its context, the
	// build deadline) instead of queueing on a lock behind a hung /data.
	building chan struct{}

	// hist is the last hour of the GPUs and nodes the builds have seen.
	hist *History

	curMu sync.Mutex
	cur   *Snapshot
	// gen counts the builds stored in cur: an asker that waited behind a
	// build takes its board (gen moved on) rather than building again,
	// however long that build took against MaxAge.
	gen uint64
}

// SourceOptions configure a Source; zero fields take the defaults.
type SourceOptions struct {
	LiveDir string
	Limits  Limits
	// Cluster is the board's own cluster (config cluster.name): the
	// cluster of the nodes Slurm lists without a snapshot, so the notes of
	// a ledger shared by clusters match by cluster (BuildCluster). ""
	// matches any cluster's notes.
	Cluster string
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
	// BuildTimeout bounds one build (snapshots and notes read) and how
	// long an asker waits for it (default 10 s). A build that overruns
	// is abandoned by its askers, who get the board before it (Old); the
	// next build starts only once it has returned, so a hung /data holds
	// one goroutine, not one per request.
	BuildTimeout time.Duration
	Now          func() time.Time
	Log          *slog.Logger
}

// Snapshot is one built board with how it was had.
type Snapshot struct {
	Board Board
	Meta  Meta
	// SlurmAsked is false when the source has no Slurm reader.
	SlurmAsked bool
	// NotesError is why the notes could not be read ("" when read).
	NotesError string
	// Old is set when a newer board was asked for but not had in time
	// (the asker's context ended or the build overran): this is the last
	// board built, with a problem line saying so.
	Old bool
	// view is the snapshot's View, made once by the source before the
	// snapshot is shared (nil in one made by hand: View makes it then).
	view *View
	// docs are its encoded documents (Encoded); nil in one made by hand.
	docs *docCache
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
	if o.BuildTimeout <= 0 {
		o.BuildTimeout = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Source{o: o, building: make(chan struct{}, 1), hist: NewHistory()}
}

// Fill adds past readings to the strips (a restart's last hour from the
// ledger): the board shows them from its next build.
func (s *Source) Fill(points []Point) { s.hist.Fill(points) }

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

// Current returns a board built at most MaxAge ago, or when that is not
// had before ctx ends or within BuildTimeout, the last one built marked
// Old. The build itself does not end with ctx: one viewer leaving must
// not spoil the board every viewer is given. The snapshot is shared:
// callers must not change it.
func (s *Source) Current(ctx context.Context) *Snapshot {
	cur, gen := s.fresh()
	if cur != nil {
		return cur
	}
	wait := time.NewTimer(s.o.BuildTimeout)
	defer wait.Stop()
	select {
	case s.building <- struct{}{}:
	case <-ctx.Done():
		return s.old("the board is being rebuilt and the request ended first")
	case <-wait.C:
		return s.old("the board's rebuild has overrun its " + s.o.BuildTimeout.String() + " (is the live directory or the ledger slow?)")
	}
	if cur := s.builtSince(gen); cur != nil {
		<-s.building // built while we waited, or is fresh
		return cur
	}
	done := make(chan *Snapshot, 1)
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.BuildTimeout)
	go func() {
		defer func() { <-s.building }()
		defer cancel()
		snap := s.build(bctx, s.o.Now())
		s.curMu.Lock()
		s.cur = snap
		s.gen++
		s.curMu.Unlock()
		done <- snap
	}()
	select {
	case snap := <-done:
		return snap
	case <-ctx.Done():
		return s.old("the board is being rebuilt and the request ended first")
	case <-wait.C:
		return s.old("the board's rebuild has overrun its " + s.o.BuildTimeout.String() + " (is the live directory or the ledger slow?)")
	}
}

// fresh is the board held when younger than MaxAge, else nil, with the
// build generation it was judged at.
func (s *Source) fresh() (*Snapshot, uint64) {
	s.curMu.Lock()
	defer s.curMu.Unlock()
	return s.freshLocked(), s.gen
}

// builtSince is the board held when a build was stored after generation
// gen (one that ran while the asker waited), or when it is fresh; else nil.
func (s *Source) builtSince(gen uint64) *Snapshot {
	s.curMu.Lock()
	defer s.curMu.Unlock()
	if s.gen != gen {
		return s.cur
	}
	return s.freshLocked()
}

func (s *Source) freshLocked() *Snapshot {
	if s.cur == nil {
		return nil
	}
	if age := s.o.Now().Sub(s.cur.Board.At); age >= 0 && age < s.o.MaxAge {
		return s.cur
	}
	return nil
}

// old is the last board built marked Old with why, or before any an
// empty board saying so.
func (s *Source) old(why string) *Snapshot {
	s.curMu.Lock()
	cur := s.cur
	s.curMu.Unlock()
	if cur == nil {
		now := s.o.Now()
		snap := &Snapshot{Old: true, Board: Build(nil, nil, nil, now), SlurmAsked: s.o.Slurm != nil,
			Meta: Meta{Problems: []Problem{{Err: "no board built yet: " + why}}}}
		snap.view = newView(snap)
		return snap
	}
	c := *cur
	c.Old = true
	c.Meta.Problems = append(cur.Meta.Problems[:len(cur.Meta.Problems):len(cur.Meta.Problems)],
		Problem{Err: "board of " + cur.Board.At.UTC().Format(time.RFC3339) + ": " + why})
	c.view = newView(&c)
	c.docs = newDocCache() // its problems differ from cur's
	return &c
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
	snap.Board = BuildCluster(s.o.Cluster, lives, st, notes, now)
	s.hist.observe(lives, &snap.Board, now)
	snap.Meta.Problems = append(snap.Meta.Problems, snap.Board.NoteProblems...)
	snap.view = newView(snap)
	snap.docs = newDocCache()
	return snap
}
