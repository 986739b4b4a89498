package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// housekeeping runs after the files of a pass: unfinished jobs, open-job
// allocation up to now, sample retention, archive retention.
func (in *Ingester) housekeeping(ctx context.Context, res *Result) error {
	now := in.d.Now()
	cfg := in.d.Config
	asked := in.newPassRuns()
	if err := in.estimateStarts(ctx, asked); err != nil {
		return fmt.Errorf("jobs without a start event: %w", err)
	}
	// Find stale open jobs first and ask sacct outside any transaction.
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	stale, err := b.StaleOpen(now.Add(-cfg.Ingest.Grace.Duration))
	b.Rollback()
	if err != nil {
		return err
	}
	type closing struct {
		o      store.OpenJob
		end    time.Time
		source string
		state  string
		code   *int
	}
	var closes []closing
	for _, o := range stale {
		if ctx.Err() != nil {
			return ErrStopped
		}
		// A run that a later run of the job followed ended by that run's start.
		next, followed := o.LaterStart, !o.LaterStart.IsZero()
		if in.d.Sacct != nil {
			info, err := askSacct(ctx, asked, o.Cluster, o.JobID, o.Restart, o.Started)
			if err == nil && info.running && !followed {
				continue // Slurm says it runs: the node is just quiet
			}
			if err == nil && !info.end.IsZero() {
				if followed && next.Before(info.end) {
					info.end = next
				}
				closes = append(closes, closing{o, info.end, "sacct", info.state, info.code})
				continue
			}
			if err != nil {
				in.d.Log.Debug("sacct did not answer; estimating the end", "job", o.JobID, "restart", o.Restart, "err", err)
			}
		}
		end := o.LastSeen
		if followed && next.Before(end) {
			end = next
		}
		closes = append(closes, closing{o: o, end: end, source: "last_sample", state: "unknown"})
	}
	// Whole months of samples go first, in a short transaction of their
	// own (PostgreSQL; nothing on SQLite): one that waits too long behind
	// a report is tried again an hour later, and the batch deletes its
	// rows meanwhile.
	cut := now.Add(-cfg.Store.SampleRetention.Duration)
	dropped, err := in.d.Store.DropSamplePartitions(ctx, cut)
	if err != nil {
		in.d.Log.Warn("old sample months not dropped: their rows are deleted instead, the drop is tried again in an hour", "err", err)
	}
	b, err = in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	for _, c := range closes {
		if err := b.CloseJob(c.o, c.end, c.source, c.state, c.code); err != nil {
			b.Rollback()
			return fmt.Errorf("close unfinished job %d: %w", c.o.JobID, err)
		}
		in.d.Log.Info("closed unfinished job", "job", c.o.JobID, "restart", c.o.Restart, "end", c.end.UTC().Format(time.RFC3339), "source", c.source)
		res.Closed++
	}
	if err := b.ExtendOpen(); err != nil {
		b.Rollback()
		return err
	}
	n, err := b.PruneSamplesKeepSeries(cut, now.Add(-cfg.Store.SeriesKept()))
	if err != nil {
		b.Rollback()
		return err
	}
	res.Pruned = dropped + n
	// The rollups by the site's local day and week: a bounded step a pass
	// until every hour is in (report.tz "Local" keeps none).
	loc, err := timespec.LoadLocation(cfg.Report.TZ)
	if err != nil {
		b.Rollback()
		return fmt.Errorf("zone rollups: %w", err)
	}
	if err := b.KeepZoneRollups(loc); err != nil {
		b.Rollback()
		return err
	}
	keep := max(cfg.Ingest.ArchiveRetention.Duration, 7*24*time.Hour)
	if _, err := b.PruneIngestedFiles(now.Add(-keep)); err != nil {
		b.Rollback()
		return err
	}
	reached("housekeeping")
	if err := b.Commit(); err != nil {
		return err
	}
	in.pruneArchive(now)
	return nil
}

// pruneArchive removes archive day directories older than the retention.
func (in *Ingester) pruneArchive(now time.Time) {
	cfg := in.d.Config.Ingest
	if cfg.Keep != "archive" || cfg.ArchiveRetention.Duration == 0 {
		return
	}
	ents, err := os.ReadDir(cfg.Archive)
	if err != nil {
		return
	}
	cut := now.Add(-cfg.ArchiveRetention.Duration).UTC().Format("2006-01-02")
	for _, e := range ents {
		if _, err := time.Parse("2006-01-02", e.Name()); err != nil || !e.IsDir() {
			continue
		}
		if e.Name() < cut {
			if err := os.RemoveAll(filepath.Join(cfg.Archive, e.Name())); err != nil {
				in.d.Log.Warn("cannot prune archive", "dir", e.Name(), "err", err)
			}
		}
	}
}

type sacctInfo struct {
	running bool
	end     time.Time
	state   string
	code    *int
}

// askSacct tells how Slurm's accounting has the run with the given restart
// count of job (of cluster) that started at start (passRuns.runs, pickRun). A run that a
// later run followed ended no later than that run's start: a requeued run's
// line reads REQUEUED with the requeue as its end.
func askSacct(ctx context.Context, asked *passRuns, cluster string, job uint64, restart int, start time.Time) (sacctInfo, error) {
	a := asked.runs(ctx, cluster, job)
	if a.err != nil {
		return sacctInfo{}, a.err
	}
	return runInfo(a.runs, restart, start)
}

// runInfo is the run of restart that started at start (the prolog's).
func runInfo(runs []sacctRun, restart int, start time.Time) (sacctInfo, error) {
	info, _, err := runInfoBy(runs, restart, start, runStart)
	return info, err
}

// runInfoBy is the run of restart whose start or end (at) lies near known,
// and its line as sacct gave it.
func runInfoBy(runs []sacctRun, restart int, known time.Time, at func(sacctRun) time.Time) (sacctInfo, sacctRun, error) {
	r, next, ok := pickRun(runs, restart, known, at)
	if !ok {
		return sacctInfo{}, r, fmt.Errorf("sacct lists %d runs, none for restart %d near %s", len(runs), restart, known.UTC().Format(time.RFC3339))
	}
	info := sacctInfo{state: r.state, end: r.end, code: r.code}
	switch strings.ToUpper(r.state) {
	case "RUNNING", "PENDING", "RESIZING", "SUSPENDED", "CONFIGURING", "COMPLETING", "STAGE_OUT":
		if next == nil {
			info.running = true
			return info, r, nil
		}
		// A later run started: this one is over, whatever its line says.
		info.end, info.state, info.code = next.start, "requeued", nil
	}
	if info.end.IsZero() {
		return sacctInfo{}, r, fmt.Errorf("sacct gives no end for state %s", r.state)
	}
	if next != nil && next.start.Before(info.end) {
		info.end = next.start
	}
	return info, r, nil
}
