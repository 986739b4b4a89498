package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// housekeeping runs after the files of a pass: unfinished jobs, open-job
// allocation up to now, sample retention, archive retention.
func (in *Ingester) housekeeping(ctx context.Context, res *Result) error {
	now := in.d.Now()
	cfg := in.d.Config
	if err := in.estimateStarts(ctx); err != nil {
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
		if in.d.Sacct != nil {
			info, err := in.askSacct(ctx, o.JobID)
			if err == nil && info.running {
				continue // Slurm says it runs: the node is just quiet
			}
			if err == nil && !info.end.IsZero() {
				closes = append(closes, closing{o, info.end, "sacct", info.state, info.code})
				continue
			}
			if err != nil {
				in.d.Log.Debug("sacct did not answer; estimating the end", "job", o.JobID, "err", err)
			}
		}
		closes = append(closes, closing{o: o, end: o.LastSeen, source: "last_sample", state: "unknown"})
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
	n, err := b.PruneSamples(now.Add(-cfg.Store.SampleRetention.Duration))
	if err != nil {
		b.Rollback()
		return err
	}
	res.Pruned = n
	keep := max(cfg.Ingest.ArchiveRetention.Duration, 7*24*time.Hour)
	if _, err := b.Tx().ExecContext(ctx, `DELETE FROM ingested_files WHERE at < ?`, now.Add(-keep).Unix()); err != nil {
		b.Rollback()
		return fmt.Errorf("prune ingested file list: %w", err)
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

// askSacct runs `sacct -j ID -X --parsable2 --noheader -o End,State,ExitCode`.
func (in *Ingester) askSacct(ctx context.Context, job uint64) (sacctInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, in.d.Config.Ingest.SacctTimeout.Duration)
	defer cancel()
	out, err := in.d.Sacct(ctx, "-j", strconv.FormatUint(job, 10), "-X", "--parsable2", "--noheader", "-o", "End,State,ExitCode")
	if err != nil {
		return sacctInfo{}, fmt.Errorf("sacct -j %d: %w", job, err)
	}
	return parseSacct(string(out), in.d.SacctLocation)
}

func parseSacct(out string, loc *time.Location) (sacctInfo, error) {
	line := strings.TrimSpace(out)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if line == "" {
		return sacctInfo{}, fmt.Errorf("sacct knows no such job")
	}
	f := strings.Split(line, "|")
	if len(f) < 3 {
		return sacctInfo{}, fmt.Errorf("sacct line %q: want End|State|ExitCode", line)
	}
	var info sacctInfo
	state, _, _ := strings.Cut(strings.TrimSpace(f[1]), " ") // "CANCELLED by 0"
	info.state = strings.ToLower(strings.TrimSuffix(state, "+"))
	switch strings.ToUpper(info.state) {
	case "RUNNING", "PENDING", "REQUEUED", "RESIZING", "SUSPENDED", "CONFIGURING", "COMPLETING", "STAGE_OUT":
		info.running = true
		return info, nil
	}
	if f[0] == "" || f[0] == "Unknown" || f[0] == "None" {
		return sacctInfo{}, fmt.Errorf("sacct gives no end for state %s", state)
	}
	end, err := time.ParseInLocation("2006-01-02T15:04:05", f[0], loc)
	if err != nil {
		return sacctInfo{}, fmt.Errorf("sacct end %q: %w", f[0], err)
	}
	info.end = end
	if c, _, ok := strings.Cut(f[2], ":"); ok {
		if v, err := strconv.Atoi(c); err == nil {
			info.code = &v
		}
	}
	return info, nil
}
