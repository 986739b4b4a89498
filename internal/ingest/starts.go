package ingest

import (
	"context"
	"fmt"
	"time"
)

// startsPerPass bounds the jobs without a start event that one pass asks
// sacct about.
const startsPerPass = 100

// estimateStarts gives the jobs whose start event never came a start: the
// end stood in for it when the end event was stored; the Start of the
// job's run with the part's restart count in sacct replaces it (Slurm's
// record), else the node's first sample of the run does, flagged
// start_estimated. Each job part is looked at once.
func (in *Ingester) estimateStarts(ctx context.Context) error {
	now := in.d.Now()
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	todo, err := b.NoStarts(startsPerPass)
	b.Rollback()
	if err != nil || len(todo) == 0 {
		return err
	}
	// sacct is asked outside any transaction, once per job id: its runs
	// answer for every restart.
	type run struct {
		job     uint64
		restart int
	}
	fromSacct := map[run]time.Time{}
	if in.d.Sacct != nil {
		asked := map[uint64][]sacctRun{}
		for _, n := range todo {
			if ctx.Err() != nil {
				break
			}
			runs, ok := asked[n.JobID]
			if !ok {
				var err error
				if runs, err = in.sacctRuns(ctx, n.JobID); err != nil {
					in.d.Log.Debug("sacct gave no start; estimating it", "job", n.JobID, "err", err)
				}
				asked[n.JobID] = runs
			}
			// The run of this restart, and not one that started after
			// this part's end: else the runs do not match the restarts.
			if r, _, ok := pickRun(runs, n.Restart); ok && !r.start.After(n.End) {
				fromSacct[run{n.JobID, n.Restart}] = r.start
			}
		}
	}
	b, err = in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	for _, n := range todo {
		start, source := n.End, "first_sample"
		if t, ok := fromSacct[run{n.JobID, n.Restart}]; ok {
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
