package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// JobMetrics turns a job's samples into the plotted metrics.
func JobMetrics(det *Detail) []plot.Metric {
	util := plot.Metric{Title: "GPU utilization", Unit: "%", Max: 100}
	mem := plot.Metric{Title: "GPU memory used", Unit: "GiB"}
	power := plot.Metric{Title: "power", Unit: "W"}
	for _, g := range det.GPUs {
		name := g.Node + " GPU " + gpuName(g)
		if len(det.Nodes) <= 1 {
			name = "GPU " + gpuName(g)
		}
		su, sm, sp := plot.Series{Name: name}, plot.Series{Name: name}, plot.Series{Name: name}
		for _, p := range g.Series {
			t := time.UnixMilli(p.T)
			su.T, sm.T, sp.T = append(su.T, t), append(sm.T, t), append(sp.T, t)
			su.Values = append(su.Values, val(p.Util, 1))
			sm.Values = append(sm.Values, val(p.MemMiB, 1.0/1024))
			sp.Values = append(sp.Values, val(p.PowerW, 1))
		}
		util.Series, mem.Series, power.Series = append(util.Series, su), append(mem.Series, sm), append(power.Series, sp)
		if g.MemTotalMiB != nil {
			mem.Max = math.Max(mem.Max, *g.MemTotalMiB/1024)
		}
	}
	return []plot.Metric{util, mem, power}
}

func val(p *float64, scale float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p * scale
}

// PlotJob writes a job's plot to path (.png or .svg).
func PlotJob(det *Detail, path string, loc *time.Location) error {
	f, err := plot.FormatOf(path)
	if err != nil {
		return err
	}
	has := false
	for _, g := range det.GPUs {
		has = has || len(g.Series) > 0
	}
	if !has {
		return fmt.Errorf("plot job %s: no samples (raw samples are kept for store.sample_retention)", det.Job.ID())
	}
	title := fmt.Sprintf("job %s (%s, %s): %d GPUs on %s, from %s", det.Job.ID(), det.Job.User, det.Job.Account, det.Job.GPUs, det.Job.Nodes,
		time.Unix(det.Job.Start, 0).In(loc).Format("2006-01-02 15:04 MST"))
	return writeFile(path, func(w *os.File) error { return plot.Job(w, f, title, JobMetrics(det)) })
}

func writeFile(path string, fn func(*os.File) error) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := fn(out); err != nil {
		out.Close()
		os.Remove(path)
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// PlotReport writes allocated GPU-hours per team per period as stacked bars.
func (d *DB) PlotReport(ctx context.Context, r Request, path string) error {
	f, err := plot.FormatOf(path)
	if err != nil {
		return err
	}
	if r.Period == timespec.None {
		r.Period = timespec.Month
	}
	r.Kind = "teams"
	t, err := d.Report(ctx, r)
	if err != nil {
		return err
	}
	bs := timespec.Buckets(r.Window, r.Period)
	periods := make([]string, len(bs))
	index := map[string]int{}
	for i, b := range bs {
		periods[i] = b.Label
		index[b.Label] = i
	}
	byTeam := map[string][]float64{}
	var order []string
	for _, row := range t.Rows {
		if row.Footer {
			continue
		}
		label, team := row.Cells[0].(string), row.Cells[1].(string)
		if byTeam[team] == nil {
			byTeam[team] = make([]float64, len(bs))
			order = append(order, team)
		}
		byTeam[team][index[label]] += float64(row.Cells[2].(int64)) / 3600
	}
	var stacks []plot.Stack
	for _, tm := range order {
		stacks = append(stacks, plot.Stack{Name: tm, Values: byTeam[tm]})
	}
	title := fmt.Sprintf("allocated GPU-hours per team and %s, %s – %s", r.Period, r.Window.Start.Format("2006-01-02"), r.Window.End.Format("2006-01-02"))
	return writeFile(path, func(w *os.File) error { return plot.Bars(w, f, title, "GPU-hours", periods, stacks) })
}

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
		Flags: append(append([]cli.Flag{dbFlag(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the file to write (.png or .svg)"},
			&cli.BoolFlag{Name: "report", Usage: "GPU-hours per team and period instead of a job"},
			&cli.StringFlag{Name: "period", Usage: "--report: day, week or month (default month)"},
			&cli.StringFlag{Name: "cluster", Usage: "the job's cluster, when several share the ledger"},
		}, windowFlags()...), filterFlags()...),
		Action: interspersed(func(c *cli.Context) error {
			e, err := load(c, d)
			if err != nil {
				return err
			}
			out := c.String("output")
			if out == "" {
				return fmt.Errorf("plot: -o FILE.png or FILE.svg is required")
			}
			if _, err := plot.FormatOf(out); err != nil {
				return err
			}
			if c.Bool("report") {
				if c.Args().Present() {
					return fmt.Errorf("plot --report takes no JOBID")
				}
				w, err := e.window(c)
				if err != nil {
					return fmt.Errorf("plot: %w", err)
				}
				p, err := timespec.ParsePeriod(c.String("period"))
				if err != nil {
					return fmt.Errorf("plot: %w", err)
				}
				m, err := teams.Load(e.cfg.Report.Teams)
				if err != nil {
					return err
				}
				f, tl := filterOf(c)
				db, err := e.open(c.Context)
				if err != nil {
					return err
				}
				defer db.Close()
				if err := db.PlotReport(c.Context, Request{Window: HourWindow(w), Period: p, Filter: f, Teams: tl, Mapping: m}, out); err != nil {
					return err
				}
				fmt.Fprintln(d.Stdout, out)
				return nil
			}
			if c.NArg() != 1 {
				return fmt.Errorf("plot: give one JOBID, or --report (see 'gpuacct plot --help')")
			}
			sp, err := ParseJobSpec(c.Args().First())
			if err != nil {
				return err
			}
			db, err := e.open(c.Context)
			if err != nil {
				return err
			}
			defer db.Close()
			det, err := db.Job(c.Context, c.String("cluster"), sp, e.now)
			if err != nil {
				return err
			}
			if err := PlotJob(det, out, e.loc); err != nil {
				return err
			}
			fmt.Fprintln(d.Stdout, out)
			return nil
		}),
	}
}
