package reportcmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// PlotCommand is `gpuacct plot`.
func PlotCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "plot",
		Usage: "PNG or SVG charts: a job's utilization, memory and power per GPU, or GPU-hours per team and period",
		UsageText: `gpuacct plot JOBID -o FILE.png|FILE.svg
gpuacct plot --report [--period day|week|month] [report options] -o FILE

A job's plot has one row per metric (utilization, memory, power): the values
over time with one line per GPU, and beside them each GPU's distribution as a
box plot in the same color. --report draws allocated GPU-hours per period as
bars stacked by team (biggest team at the bottom), over the last 7 days by
default; with --start/--end a longer window, per month unless --period says.

Examples:
   gpuacct plot 123456 -o job.png
   gpuacct plot 123456_3 -o job.svg
   gpuacct plot --report --start 2026-01-01 --end 2027-01-01 --period month -o teams-2026.png
   gpuacct plot --report --start now-4weeks --period week --teams vision,nlp -o recent.svg`,
		Flags: append(append(append(cliwire.LedgerFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the file to write (.png or .svg)"},
			&cli.BoolFlag{Name: "report", Usage: "GPU-hours per team and period instead of a job"},
			&cli.StringFlag{Name: "period", Usage: "--report: day, week or month (default month)"},
		), windowFlags()...), append(filterFlags(), clusterFlagsSaying(
			"these clusters of the ledger (comma-separated; all: every one). Default: the local one (SLURM_CLUSTER_NAME, else cluster.name); for a JOBID, every one when the local one is not in the ledger",
			"every cluster of the ledger (-M all); --report then stacks per team and cluster")...)...),
		Action: func(c *cli.Context) error {
			// The command line is checked before the configuration and the
			// ledger are read: a usage error is one line, exit 2.
			out := c.String("output")
			if out == "" {
				return cliwire.Usagef("plot: -o FILE.png or FILE.svg is required")
			}
			if _, err := plot.FormatOf(out); err != nil {
				return &cliwire.UsageError{Err: err}
			}
			if c.Bool("report") {
				if c.Args().Present() {
					return cliwire.Usagef("plot --report takes no JOBID")
				}
				return plotReport(c, d, out)
			}
			sp, err := jobArg(c, "plot: give one JOBID, or --report (see 'gpuacct plot --help')")
			if err != nil {
				return err
			}
			e, err := load(c, d)
			if err != nil {
				return err
			}
			det, _, _, err := e.job(c, sp, false)
			if err != nil {
				return err
			}
			if err := report.PlotJob(det, out, e.loc); err != nil {
				return err
			}
			fmt.Fprintln(d.Stdout, out)
			return nil
		},
	}
}

// plotReport is plot --report: allocated GPU-hours per team and period.
func plotReport(c *cli.Context, d Deps, out string) error {
	e, w, err := loadWindow(c, d, "plot")
	if err != nil {
		return err
	}
	p, err := timespec.ParsePeriod(c.String("period"))
	if err != nil {
		return cliwire.Usagef("plot: %v", err)
	}
	m, err := teams.Load(e.cfg.Report.Teams)
	if err != nil {
		return err
	}
	db, s, f, tl, err := e.openFiltered(c, d, "plot", false)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.PlotReport(c.Context, report.Request{Window: report.HourWindow(w), Period: p, Filter: f, Teams: tl, Mapping: m, Scope: s}, out); err != nil {
		return usage("plot", err)
	}
	fmt.Fprintln(d.Stdout, out)
	return nil
}
