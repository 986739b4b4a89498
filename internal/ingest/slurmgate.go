package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

const (
	// slurmQuiet is how long after a failed sacct or sacctmgr call no
	// other is made: the rest of the pass (and the next, if it comes
	// sooner) goes on without Slurm's answers rather than wait out one
	// timeout a call, so a dead slurmdbd costs one timeout a minute.
	slurmQuiet = time.Minute
	// slurmFactsEvery is how often Slurm's facts besides jobs (the
	// account tree, node events, reservations) are read: they change
	// rarely, and a pass comes every half minute or so.
	slurmFactsEvery = 5 * time.Minute
)

// errSlurmSkipped says a call was not made: an earlier one failed less
// than slurmQuiet ago, or Slurm's facts were read less than
// slurmFactsEvery ago. Callers log it at debug level (logSlurm): the
// failure was logged when it happened.
var errSlurmSkipped = errors.New("not asked")

// errSlurmFresh is the account tree skipped because Slurm's facts were
// read less than slurmFactsEvery ago.
var errSlurmFresh = fmt.Errorf("%w: Slurm's facts were read lately", errSlurmSkipped)

// slurmGate stands between ingest and sacct and sacctmgr for the
// daemon's life (Prepare puts it there): after one call fails, calls are
// skipped for slurmQuiet, and a round of Slurm's facts, which begins with
// the account tree (slurmFacts), is read at most every slurmFactsEvery.
// Ingesters built without it (New with bare funcs) ask every time.
type slurmGate struct {
	now func() time.Time

	mu         sync.Mutex
	quietUntil time.Time
	factsRead  time.Time // the last account tree read, zero: none
}

func newSlurmGate(now func() time.Time) *slurmGate {
	return &slurmGate{now: now}
}

// guard wraps prog's func (nil stays nil: never ask).
func (g *slurmGate) guard(prog string, f Sacct) Sacct {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, args ...string) ([]byte, error) {
		facts := prog == "sacctmgr" && slices.Equal(args, accountTreeArgs())
		if err := g.allow(prog, facts); err != nil {
			return nil, err
		}
		out, err := f(ctx, args...)
		g.done(ctx, facts, err)
		return out, err
	}
}

func (g *slurmGate) allow(prog string, facts bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if now.Before(g.quietUntil) {
		return fmt.Errorf("%s %w: a call failed, Slurm is asked again from %s", prog, errSlurmSkipped, g.quietUntil.UTC().Format(time.RFC3339))
	}
	if facts && !g.factsRead.IsZero() && now.Sub(g.factsRead) < slurmFactsEvery && !now.Before(g.factsRead) {
		return fmt.Errorf("%s %w, at %s", prog, errSlurmFresh, g.factsRead.UTC().Format(time.RFC3339))
	}
	return nil
}

func (g *slurmGate) done(ctx context.Context, facts bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	switch {
	case err == nil:
		if facts {
			g.factsRead = now
		}
	case errors.Is(ctx.Err(), context.Canceled):
		// The daemon is stopping: not Slurm's failure.
	default:
		g.quietUntil = now.Add(slurmQuiet)
	}
}

// logSlurm logs why Slurm gave no answer: a call that failed at info
// level, once, and the calls skipped after it at debug level.
func (in *Ingester) logSlurm(msg string, err error) {
	if errors.Is(err, errSlurmSkipped) {
		in.d.Log.Debug(msg, "err", err)
		return
	}
	in.d.Log.Info(msg, "err", err)
}
