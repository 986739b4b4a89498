package ingest

import (
	"context"
	"fmt"
	"time"
)

// startsPerPass bounds the jobs without a start event that one pass asks
// sacct about.
const startsPerPass = 100

// startsRetry is how long after its end a job part whose sacct call failed
// is asked again: slurmdbd may be down a while, but a dead sacct must not
// cost calls forever.
const startsRetry = 24 * time.Hour

// unanswered is the start source of a part whose start is its first
// sample because the sacct call failed: asked again next pass.
const unanswered = "first_sample_unanswered"

// estimateStarts gives the jobs whose start event never came a start: the
// end stood in for it when the end event was stored; the Start of the
// job's run with the part's restart count in sacct replaces it (Slurm's
// record), else the node's first sample of the run does, flagged
// start_estimated. A part sacct answered for is looked at once; one whose
// sacct call failed is asked again each pass until startsRetry after its
// end, and after a failed call the pass asks no more (one timeout a pass).
// asked holds the pass's sacct answers, for the unfinished jobs after.
func (in *Ingester) estimateStarts(ctx context.Context, asked *passRuns) error {
	now := in.d.Now()
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	todo, err := b.NoStarts(startsPerPass, unanswered, now.Add(-startsRetry))
	b.Rollback()
	if err != nil || len(todo) == 0 {
		return err
	}
	// sacct is asked outside any transaction, once per job id of a
	// cluster (-M): its runs answer for every restart.
	type run struct {
		clusterJob
		restart int
	}
	fromSacct := map[run]time.Time{}
	if in.d.Sacct != nil {
		for _, n := range todo {
			if ctx.Err() != nil {
				return ErrStopped
			}
			a := asked.runs(ctx, n.Cluster, n.JobID)
			if a.failed {
				continue
			}
			if a.err != nil {
				in.d.Log.Debug("sacct gave no start; estimating it", "cluster", n.Cluster, "job", n.JobID, "err", a.err)
			}
			// The run of this restart that ended when the epilog says,
			// and started before.
			if r, _, ok := pickRun(a.runs, n.Restart, n.End, runEnd); ok && !r.start.After(n.End) {
				fromSacct[run{clusterJob{n.Cluster, n.JobID}, n.Restart}] = r.start
			}
		}
	}
	b, err = in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	for _, n := range todo {
		start, source := n.End, "first_sample"
		t, ok := fromSacct[run{clusterJob{n.Cluster, n.JobID}, n.Restart}]
		// asked again: the pass's answer, or its failure, without a call.
		if !ok && in.d.Sacct != nil && asked.runs(ctx, n.Cluster, n.JobID).failed {
			if n.Source == unanswered {
				continue // as it was: asked again next pass
			}
			source = unanswered
		}
		if ok {
			start, source = t, "sacct"
		} else if t, ok, err := b.FirstSample(n); err != nil {
			b.Rollback()
			return err
		} else if ok && t.Before(start) {
			start = t
		}
		if err := b.SetStart(n, start, source); err != nil {
			b.Rollback()
			return fmt.Errorf("start of job %d: %w", n.JobID, err)
		}
		in.d.Log.Info("job without a start event", "job", n.JobID, "restart", n.Restart, "start", start.UTC().Format(time.RFC3339), "source", source)
	}
	return b.Commit()
}
