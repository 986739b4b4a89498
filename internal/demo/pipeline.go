package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/ingest/gendata"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	rteams "github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// PipelineOptions size the simulated cluster of the whole pipeline.
type PipelineOptions struct {
	Dir   string
	Nodes int
	GPUs  int
	Weeks int
	Seed  int64
	Width int
}

// Pipeline runs the accounting pipeline end to end on simulated weeks:
// job events through the real prolog/epilog code, samples and job × GPU
// aggregates as the agent ships them, one real ingest pass into a fresh
// database under Dir, then the weekly team report, the detail of the least
// efficient job and a plot file.
func Pipeline(ctx context.Context, w io.Writer, o PipelineOptions) error {
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	dur := time.Duration(o.Weeks) * 7 * 24 * time.Hour
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(o.Dir, "gpuacct.db")
	cfg.Ingest.Incoming = filepath.Join(o.Dir, "incoming")
	cfg.Ingest.Quarantine = filepath.Join(o.Dir, "quarantine")
	cfg.Ingest.Archive = filepath.Join(o.Dir, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	if err := os.MkdirAll(cfg.Ingest.Incoming, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Chmod(o.Dir, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	truth, err := gendata.Generate(cfg.Ingest.Incoming, gendata.Options{Cluster: "demo", Nodes: o.Nodes, GPUsPerNode: o.GPUs, Start: start,
		Duration: dur, Interval: 5 * time.Minute, Segment: 6 * time.Hour, JobsPerNode: 5 * 7 * o.Weeks, HookEvents: true, Aggregates: true, Open: 0.02, Seed: o.Seed})
	if err != nil {
		return fmt.Errorf("demo: simulate: %w", err)
	}
	now := start.Add(dur).Add(time.Hour)
	st, err := store.Open(ctx, store.Options{Path: cfg.Store.Path})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	res, err := ingest.New(ingest.Deps{Store: st, Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(ctx)
	st.Close()
	if err != nil {
		return fmt.Errorf("demo: ingest: %w", err)
	}
	fmt.Fprintf(w, "Simulated %d weeks of %d nodes × %d GPUs: %d jobs, %d samples, through the real hooks and one ingest pass (%d files) into %s\n\n",
		o.Weeks, o.Nodes, o.GPUs, truth.Jobs, truth.Samples, res.Files, cfg.Store.Path)
	db, err := report.OpenDB(ctx, cfg.Store.Path, time.Second)
	if err != nil {
		return err
	}
	defer db.Close()
	win := timespec.Window{Start: start, End: start.Add(dur)}
	fmt.Fprintf(w, "$ gpuacct report teams --period week --start %s --end %s --db %s\n\n", win.Start.Format("2006-01-02"), win.End.Format("2006-01-02"), cfg.Store.Path)
	t, err := db.Report(ctx, report.Request{Kind: "teams", Window: win, Period: timespec.Week, Mapping: &rteams.Mapping{}})
	if err != nil {
		return err
	}
	if err := table.Write(w, t, table.Options{Width: o.Width}); err != nil {
		return err
	}
	// The least efficient job with samples is the one worth a look.
	var worst *report.JobRow
	err = db.Jobs(ctx, report.JobQuery{Window: win, Sort: "eff", Limit: 1, Now: now}, func(j *report.JobRow) bool {
		if j.SampleS > 0 && j.End.Valid && j.GPUs > 1 {
			worst = j
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if worst == nil {
		return fmt.Errorf("demo: no finished multi-GPU job with samples")
	}
	det, err := db.Job(ctx, worst.Cluster, report.JobSpec{ID: worst.JobID, Restart: worst.Restart}, now)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n$ gpuacct job %s --db %s\n\n", worst.ID(), cfg.Store.Path)
	if err := report.WriteJobText(w, det, &rteams.Mapping{}, time.UTC, max(o.Width, 100)); err != nil {
		return err
	}
	png := filepath.Join(o.Dir, fmt.Sprintf("job-%d.png", worst.JobID))
	if err := report.PlotJob(det, png, time.UTC); err != nil {
		return err
	}
	teamsPNG := filepath.Join(o.Dir, "teams-per-week.png")
	if err := db.PlotReport(ctx, report.Request{Window: win, Period: timespec.Week, Mapping: &rteams.Mapping{}}, teamsPNG); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nPlots: %s\n       %s\n", png, teamsPNG)
	return nil
}
