package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// reconcileTimes takes the allocation start and end, state and exit code
// of finished job runs from Slurm's accounting, which the hooks' own times
// only approach (a prolog starts after Slurm's start, an epilog ends after
// Slurm's end): so a job's GPU-seconds are sacct's gres/gpu × ElapsedRaw
// and reports equal sreport's. The store moves every figure after the
// times (job hours, rollups, totals). The same call brings each run's
// resources (CPUs, TotalCPU, memory asked and peak RSS, time limit: see
// askSacctRunsOf), kept beside its times. Runs are asked about in batches,
// once: one sacct answers for without listing it is asked again each pass
// until sacctGiveUp after its end, and meanwhile keeps the hooks' times
// (end_source epilog). A failed call answers for no run, so none is given
// up for it; it ends the pass's asking (one timeout a pass) and never fails
// the pass.
func (in *Ingester) reconcileTimes(ctx context.Context) {
	if in.d.Sacct == nil {
		return
	}
	in.askInBatches(ctx, "job times not taken from sacct; retrying next pass", in.reconcileBatch)
}

// reconcileBatch reconciles the batch of unreconciled runs before row
// before (0: the newest), with at most budget sacct calls (one a cluster).
// It returns the batch's last (oldest) row when the batch was full and
// done (more may wait), else 0, and the calls it made.
func (in *Ingester) reconcileBatch(ctx context.Context, now time.Time, before int64, budget int) (int64, int, error) {
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return 0, 0, err
	}
	jobs, err := b.Unreconciled(before, sacctBatch)
	b.Rollback()
	if err != nil || len(jobs) == 0 {
		return 0, 0, err
	}
	answered := map[string]bool{} // by cluster: a failed call answers for none of its runs
	times := map[int64]store.SlurmTimes{}
	resources := map[int64]store.Resources{}
	billing := map[int64]float64{} // Slurm's billing=N, by run (SetSlurmBilling)
	calls, all, serr := askPerCluster(jobs, func(j store.Unreconciled) string { return j.Cluster }, budget,
		func(cluster string, js []store.Unreconciled) error {
			runs, err := in.askSacctRunsOf(ctx, cluster, js)
			if err != nil {
				// Not answered: a failed call gives up no run, whatever its age.
				return err
			}
			answered[cluster] = true
			for _, j := range js {
				if t, r, ok := slurmTimes(j, runs[j.JobID]); ok {
					times[j.Row] = t
					if u, ok := r.resources.resources(); ok {
						resources[j.Row] = u
					}
					if r.resources.billed {
						billing[j.Row] = r.resources.billing
					}
				}
			}
			return nil
		})
	full := all && len(jobs) == sacctBatch
	b, err = in.d.Store.Begin(ctx, now)
	if err != nil {
		return 0, calls, err
	}
	done, gaveUp := 0, 0
	for _, j := range jobs {
		if !answered[j.Cluster] {
			continue
		}
		if t, ok := times[j.Row]; ok {
			if err := b.Reconcile(j.Row, t); err != nil {
				b.Rollback()
				return 0, calls, fmt.Errorf("job %d (restart %d): %w", j.JobID, j.Restart, err)
			}
			if u, ok := resources[j.Row]; ok {
				if err := b.SetResources(j.Row, u); err != nil {
					b.Rollback()
					return 0, calls, fmt.Errorf("job %d (restart %d): %w", j.JobID, j.Restart, err)
				}
			}
			if v, ok := billing[j.Row]; ok {
				if err := b.SetSlurmBilling(j.Row, v); err != nil {
					b.Rollback()
					return 0, calls, fmt.Errorf("billing of job %d (restart %d): %w", j.JobID, j.Restart, err)
				}
			}
			done++
			continue
		}
		if now.Sub(j.End) > sacctGiveUp {
			if err := b.GiveUpReconcile(j.Row); err != nil {
				b.Rollback()
				return 0, calls, err
			}
			gaveUp++
		}
	}
	if err := b.Commit(); err != nil {
		return 0, calls, err
	}
	// Slurm's times move job hours (the commit's rerolls among them):
	// they are held to their allocation as every batch's are.
	checkTouched(ctx, in.d.Store, b.TouchedHours(), in.d.Log, in.d.Metrics)
	if done > 0 || gaveUp > 0 {
		in.d.Log.Debug("job times from sacct", "reconciled", done, "given_up", gaveUp)
	}
	if serr != nil {
		return 0, calls, serr
	}
	if !full {
		return 0, calls, nil
	}
	return jobs[len(jobs)-1].Row, calls, nil
}

// askSacctRunsOf asks sacct for every run (-D: a requeued job's earlier
// ones too) of the given jobs of cluster (-M), with their steps and
// resources, in one call. A call that fails in other ways than by time
// (an answer over the output bound: jobs of very many steps; a sacct that
// lacks a resource field) is asked once more as before the resources
// were asked: the runs only (-X), so that their times never wait on their
// resources, which then stay not recorded. A call out of time is not
// asked again (one timeout a pass).
func (in *Ingester) askSacctRunsOf(ctx context.Context, cluster string, jobs []store.Unreconciled) (map[uint64][]sacctRun, error) {
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.JobID
	}
	out, err := in.sacctJobs(ctx, cluster, ids, "-D", "--parsable2", "--noheader", "-o", sacctResourceFields)
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
		in.logSlurm("job usage not taken from sacct; asking for the times alone", err)
		out, err = in.sacctJobs(ctx, cluster, ids, "-X", "-D", "--parsable2", "--noheader", "-o", sacctRunFields)
	}
	if err != nil {
		return nil, err
	}
	return parseSacctRunsOf(string(out), in.d.SacctLocation), nil
}

// slurmTimes is the run of j that Slurm's accounting lists, if it lists
// one that has ended: the run of j's restart count that started near the
// prolog's start, or, where the start is an estimate, ended near the
// epilog's end (pickRun). The run is returned for its resources.
func slurmTimes(j store.Unreconciled, runs []sacctRun) (store.SlurmTimes, sacctRun, bool) {
	known, at := j.Start, runStart
	if j.StartEstimated {
		known, at = j.End, runEnd
	}
	info, r, err := runInfoBy(runs, j.Restart, known, at)
	if err != nil || info.running || r.start.IsZero() || info.end.IsZero() {
		return store.SlurmTimes{}, sacctRun{}, false
	}
	t := store.SlurmTimes{Start: r.start, End: info.end, State: info.state, ExitCode: info.code, Submit: r.submit}
	if info.code != nil {
		t.ExitSignal = r.signal
	}
	return t, r, true
}
