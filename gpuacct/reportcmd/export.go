package reportcmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report"
)

// ExportCommand is `gpuacct export`.
func ExportCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "job rollups, job × GPU figures or raw samples as CSV or JSON lines",
		UsageText: `gpuacct export {jobs|gpus|samples} [options]

jobs: one row per job run; gpus: one row per job × GPU (the agent's
aggregates); samples: raw readings (kept for store.sample_retention). Rows of
jobs that overlap the window (samples: taken in it). Columns are stable and
documented in docs/reports.md; a missing value is empty (CSV) or null (JSON),
never 0. A progress bar goes to a terminal's stderr; a pipe gets only data.

Examples:
   gpuacct export jobs --start 2026-01-01 --end 2026-02-01 > jan.csv
   gpuacct export samples --start now-1day --format jsonl | gzip > day.jsonl.gz
   gpuacct export samples --start yesterday --end today --split-dir /tmp/samples   # one file per node
   gpuacct export gpus --start 11/01/26 -o gpus.csv
   gpuacct export jobs --all-clusters --start 2026-01-01 > all.csv   # every cluster of the ledger
   gpuacct export samples --job 123456 > job123456.csv   # one job's GPUs over its run, with its chosen metrics
   gpuacct export samples --job 123456 --human   # times in report.tz, figures in their units`,
		Flags: append(append(append(cliwire.LedgerFlags(), windowFlags()...),
			&cli.StringFlag{Name: "format", Usage: "csv or jsonl", Value: "csv"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to this file instead of stdout"},
			&cli.StringFlag{Name: "split-dir", Usage: "one file per node in this directory (gpus, samples)"},
			&cli.BoolFlag{Name: "noheader", Aliases: []string{"n"}, Usage: "no CSV header line"},
			&cli.StringFlag{Name: "job", Usage: "samples: only this job's GPUs over its run (1234, 1234_7, 1234+1), in place of the window"},
			&cli.BoolFlag{Name: "human", Usage: "samples: times in the report's zone and figures in their units (87 %, 312.5 W), for people rather than programs"},
		), clusterFlagsSaying("the rows of these clusters of the ledger (comma-separated; all: every one). Default: the local one (SLURM_CLUSTER_NAME, else cluster.name) when several share the ledger",
			"the rows of every cluster of the ledger (-M all); the cluster column says whose each row is")...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cliwire.Usagef("export: name what to export: jobs, gpus or samples (see 'gpuacct export --help')")
			}
			kind := c.Args().First()
			if _, ok := report.ExportColumns[kind]; !ok {
				return cliwire.Usagef("export: unknown export %q: use jobs, gpus or samples", kind)
			}
			// Refused before the ledger is opened: a typo must not wait
			// for a long export's first row to be told.
			switch f := c.String("format"); f {
			case "", "csv", "jsonl", "json":
			default:
				return cliwire.Usagef("export %s: --format %q is not csv or jsonl", kind, f)
			}
			if c.String("split-dir") != "" && kind == "jobs" {
				return cliwire.Usagef("export jobs: --split-dir: jobs span nodes; split gpus or samples")
			}
			var job *report.JobSpec
			if j := c.String("job"); j != "" {
				sp, err := report.ParseJobSpec(j)
				if err != nil {
					return cliwire.Usagef("export %s: --job: %v", kind, err)
				}
				job = &sp
			}
			e, w, err := loadWindow(c, d, "export "+kind)
			if err != nil {
				return err
			}
			db, s, err := e.openScoped(c, "export "+kind, false)
			if err != nil {
				return err
			}
			defer db.Close()
			o := report.ExportOptions{Kind: kind, Window: w, Format: c.String("format"), Out: d.Stdout, SplitDir: c.String("split-dir"), NoHeader: c.Bool("noheader"),
				Clusters: s.Filter(), Now: e.now, Human: c.Bool("human"), Location: e.loc}
			o.Job = job
			toFile := o.SplitDir != "" || c.String("output") != ""
			if p := c.String("output"); p != "" {
				f, err := os.Create(p)
				if err != nil {
					return fmt.Errorf("export %s: %w", kind, err)
				}
				defer f.Close()
				o.Out = f
			}
			if d.StderrTTY() && (toFile || d.Width() == 0) {
				p, done := progressBar(d.Stderr, "export "+kind, d.Now)
				o.Progress = p
				defer done()
			}
			if _, err := db.Export(c.Context, o); err != nil {
				return usage("export "+kind, err)
			}
			if f, ok := o.Out.(*os.File); ok && f != os.Stdout {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("export %s: %w", kind, err)
				}
			}
			return nil
		},
	}
}

// progressBar draws "export samples [=====>     ]  45%  1,234,567 rows"
// on one terminal line, at most every 100 ms.
func progressBar(w io.Writer, label string, now func() time.Time) (func(float64, int64), func()) {
	var last time.Time
	draw := func(f float64, rows int64) {
		f = min(max(f, 0), 1)
		const width = 30
		full := int(f * width)
		bar := strings.Repeat("=", full)
		if full < width {
			bar += ">" + strings.Repeat(" ", width-full-1)
		}
		fmt.Fprintf(w, "\r%s [%s] %3.0f%%  %d rows", label, bar, f*100, rows)
	}
	return func(f float64, rows int64) {
			if t := now(); t.Sub(last) >= 100*time.Millisecond {
				last = t
				draw(f, rows)
			}
		}, func() {
			fmt.Fprint(w, "\r\033[K")
		}
}
