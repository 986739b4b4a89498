package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// jobMetrics turns a job's samples into the plotted metrics.
func jobMetrics(det *Detail) []plot.Metric {
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
	return writeFile(path, func(w *os.File) error { return plot.Job(w, f, title, jobMetrics(det)) })
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
func (d *Ledger) PlotReport(ctx context.Context, r Request, path string) error {
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
	// Each team in the color the dashboard gives it.
	m := r.Mapping
	if m == nil {
		m = &teams.Mapping{}
	}
	known, err := d.KnownTeams(ctx, m)
	if err != nil {
		return err
	}
	colors := plot.TeamColors(known)
	byTeam := map[string][]float64{}
	colorOf := map[string]string{}
	var order []string
	for _, row := range t.Rows {
		if row.Footer {
			continue
		}
		label, team, alloc := row.Cells[0].(string), row.Cells[1].(string), row.Cells[2]
		color := plot.TeamColor(colors, team)
		if r.Scope.Several() {
			// A team of each cluster is a stack of its own.
			color = plot.TeamColor(colors, row.Cells[2].(string))
			team, alloc = row.Cells[2].(string)+" ("+row.Cells[1].(string)+")", row.Cells[3]
		}
		if byTeam[team] == nil {
			byTeam[team] = make([]float64, len(bs))
			colorOf[team] = color
			order = append(order, team)
		}
		byTeam[team][index[label]] += float64(alloc.(int64)) / 3600
	}
	var stacks []plot.Stack
	for _, tm := range order {
		stacks = append(stacks, plot.Stack{Name: tm, Color: colorOf[tm], Values: byTeam[tm]})
	}
	on := r.Scope.on()
	title := fmt.Sprintf("allocated GPU-hours per team and %s%s, %s – %s", r.Period, on, r.Window.Start.Format("2006-01-02"), r.Window.End.Format("2006-01-02"))
	return writeFile(path, func(w *os.File) error { return plot.Bars(w, f, title, "GPU-hours", periods, stacks) })
}
