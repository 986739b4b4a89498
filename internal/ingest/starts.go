package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// startsPerPass bounds the jobs without a start event that one pass asks
// sacct about.
const startsPerPass = 100

// estimateStarts gives the jobs whose start event never came a start: the
// end stood in for it when the end event was stored; sacct's Start
// replaces it (Slurm's record), else the node's first sample of the job
// does, flagged start_estimated. Each job part is looked at once.
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
	// sacct is asked outside any transaction.
	fromSacct := map[uint64]time.Time{}
	if in.d.Sacct != nil {
		for _, n := range todo {
			if _, ok := fromSacct[n.JobID]; ok || ctx.Err() != nil {
				continue
			}
			t, err := in.sacctStart(ctx, n.JobID)
			if err != nil {
				in.d.Log.Debug("sacct gave no start; estimating it", "job", n.JobID, "err", err)
				continue
			}
			fromSacct[n.JobID] = t
		}
	}
	b, err = in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	for _, n := range todo {
		start, source := n.End, "first_sample"
		if t, ok := fromSacct[n.JobID]; ok {
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

// sacctStart asks `sacct -j ID -X --parsable2 --noheader -o Start`.
func (in *Ingester) sacctStart(ctx context.Context, job uint64) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, in.d.Config.Ingest.SacctTimeout.Duration)
	defer cancel()
	out, err := in.d.Sacct(ctx, "-j", strconv.FormatUint(job, 10), "-X", "--parsable2", "--noheader", "-o", "Start")
	if err != nil {
		return time.Time{}, fmt.Errorf("sacct -j %d: %w", job, err)
	}
	return parseSacctStart(string(out), in.d.SacctLocation)
}

func parseSacctStart(out string, loc *time.Location) (time.Time, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimSpace(line)
	switch line {
	case "", "Unknown", "None":
		return time.Time{}, fmt.Errorf("sacct gives no start (%q)", line)
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", line, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("sacct start %q: %w", line, err)
	}
	return t, nil
}
