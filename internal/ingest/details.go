package ingest

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// fillDetails asks sacct what the hooks cannot know of finished jobs: the
// comment and array ids (fillJobDetails), then Slurm's own times, state
// and exit code (reconcileTimes). A failed details call skips the times
// this pass, so that a dead sacct costs one timeout a pass.
func (in *Ingester) fillDetails(ctx context.Context) {
	if in.d.Sacct == nil {
		return
	}
	if in.fillJobDetails(ctx) {
		in.reconcileTimes(ctx)
	}
}

// fillJobDetails asks sacct for the comment, QOS and array ids of the jobs not
// yet looked up: slurmd hands the Prolog/Epilog neither, and the comment
// is what report.ignore_tag looks for, so this runs before the ignore
// requests and tag are applied. sacct failing is logged and retried next
// pass (false); it never fails the pass.
func (in *Ingester) fillJobDetails(ctx context.Context) bool {
	return in.askInBatches(ctx, "job comments and array ids not looked up; retrying next pass", in.fillDetailsBatch)
}

// fillDetailsBatch looks up the batch of unchecked jobs after row after,
// with at most budget sacct calls (one a cluster). It returns the batch's
// last row when the batch was full and done (more may wait), else 0, and
// the calls it made.
func (in *Ingester) fillDetailsBatch(ctx context.Context, now time.Time, after int64, budget int) (int64, int, error) {
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return 0, 0, err
	}
	jobs, err := b.UncheckedJobs(after, sacctBatch)
	b.Rollback()
	if err != nil || len(jobs) == 0 {
		return 0, 0, err
	}
	answered := map[string]bool{} // by cluster: a failed call answers for none of its jobs
	known := map[int64]store.JobDetails{}
	calls, all, serr := askPerCluster(jobs, uncheckedCluster, budget,
		func(cluster string, js []store.UncheckedJob) error {
			ids := make([]uint64, len(js))
			for i, j := range js {
				ids[i] = j.JobID
			}
			out, err := in.sacctJobs(ctx, cluster, ids, "-X", "--parsable2", "--noheader", "-o", "JobIDRaw,JobID,QOS,Comment")
			if err != nil {
				return err // not answered: no job is given up for it
			}
			answered[cluster] = true
			got := parseSacctDetails(string(out))
			for _, j := range js {
				if d, ok := got[j.JobID]; ok {
					known[j.Row] = d
				}
			}
			return nil
		})
	b, err = in.d.Store.Begin(ctx, now)
	if err != nil {
		return 0, calls, err
	}
	filled, gaveUp := 0, 0
	for _, j := range jobs {
		if !answered[j.Cluster] {
			continue
		}
		if d, ok := known[j.Row]; ok {
			if err := b.SetJobDetails(j.Row, d); err != nil {
				b.Rollback()
				return 0, calls, err
			}
			filled++
			continue
		}
		if now.Sub(j.Seen) > sacctGiveUp {
			if err := b.GiveUpJobDetails(j.Row); err != nil {
				b.Rollback()
				return 0, calls, err
			}
			gaveUp++
		}
	}
	if err := b.Commit(); err != nil {
		return 0, calls, err
	}
	if filled > 0 || gaveUp > 0 {
		in.d.Log.Debug("job details from sacct", "filled", filled, "given_up", gaveUp)
	}
	if serr != nil {
		return 0, calls, serr
	}
	if !all || len(jobs) < sacctBatch {
		return 0, calls, nil
	}
	return jobs[len(jobs)-1].Row, calls, nil
}

// uncheckedCluster is the cluster sacct is asked about a job's details
// on (-M): the job's own, so that job N of another cluster in a shared
// ledger does not take the local job N's comment.
func uncheckedCluster(j store.UncheckedJob) string { return j.Cluster }

// parseSacctDetails reads `sacct -X -P -n -o JobIDRaw,JobID,QOS,Comment`
// lines. sacct -P does not escape '|' inside a comment, so the comment is
// last: the rest of the line after the third '|'. An array task's JobID reads
// ARRAYID_TASK ("40_2"); a pending array's "40_[3-9]" and a heterogeneous
// job's "40+1" carry no task. Lines that do not parse are skipped; a job
// listed twice keeps its last line.
func parseSacctDetails(out string) map[uint64]store.JobDetails {
	res := make(map[uint64]store.JobDetails)
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimRight(line, "\r")
		raw, rest, ok := strings.Cut(line, "|")
		if !ok {
			continue
		}
		jobID, rest, ok := strings.Cut(rest, "|")
		if !ok {
			continue
		}
		qos, comment, ok := strings.Cut(rest, "|")
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(raw), 10, 64)
		if err != nil || id == 0 {
			continue
		}
		d := store.JobDetails{Comment: strings.TrimSpace(comment), QOS: strings.TrimSpace(qos)}
		if a, t, ok := strings.Cut(strings.TrimSpace(jobID), "_"); ok {
			aj, err1 := strconv.ParseUint(a, 10, 64)
			tk, err2 := strconv.ParseInt(t, 10, 64)
			if err1 == nil && err2 == nil && aj != 0 && tk >= 0 {
				d.ArrayJobID, d.ArrayTaskID = aj, tk
			}
		}
		res[id] = d
	}
	return res
}
