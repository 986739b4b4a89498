// Package plot draws gpuacct's charts with gonum.org/v1/plot: a job's
// metrics per GPU over time beside their distribution (box plots), and
// GPU-hours per team per period as stacked bars. PNG or SVG.
//
// Files: plot.go the charts; colors.go the team colors, one palette and
// one assignment (TeamColors) for these charts and the dashboard.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Format is png or svg.
type Format string

// The formats.
const (
	PNG Format = "png"
	SVG Format = "svg"
)

// FormatOf picks the format from a file name's extension.
func FormatOf(path string) (Format, error) {
	switch {
	case strings.HasSuffix(strings.ToLower(path), ".png"):
		return PNG, nil
	case strings.HasSuffix(strings.ToLower(path), ".svg"):
		return SVG, nil
	}
	return "", fmt.Errorf("plot file %q: name it .png or .svg", path)
}

// Series is one GPU's values over time; NaN is a missing value (drawn
// as a gap, never as 0).
type Series struct {
	Name   string
	T      []time.Time
	Values []float64
}

// Metric is one panel row: a line chart and a box plot of the same values.
type Metric struct {
	Title  string
	Unit   string
	Max    float64 // fixed y maximum (100 for %), 0 for automatic
	Series []Series
}

// Job draws one row per metric: values over time on the left (one line
// per GPU, in the same color as its box), their distribution per GPU on
// the right.
func Job(w io.Writer, f Format, title string, metrics []Metric) error {
	if len(metrics) == 0 {
		return fmt.Errorf("plot %s: nothing to draw", title)
	}
	rows := make([][]*plot.Plot, len(metrics))
	for i, m := range metrics {
		line, err := lines(m, i == 0)
		if err != nil {
			return fmt.Errorf("plot %s: %w", m.Title, err)
		}
		box, err := boxes(m)
		if err != nil {
			return fmt.Errorf("plot %s: %w", m.Title, err)
		}
		if i == 0 {
			line.Title.Text = title
		}
		rows[i] = []*plot.Plot{line, box}
	}
	width, height := 12*vg.Inch, vg.Length(len(metrics))*3*vg.Inch
	return render(w, f, width, height, func(dc draw.Canvas) {
		tiles := draw.Tiles{Rows: len(rows), Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
			PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
		// The line charts get the room: 3/4 of the width.
		left := draw.Canvas{Canvas: dc.Canvas, Rectangle: dc.Rectangle}
		left.Max.X = dc.Min.X + (dc.Max.X-dc.Min.X)*3/4
		right := draw.Canvas{Canvas: dc.Canvas, Rectangle: dc.Rectangle}
		right.Min.X = left.Max.X
		tiles.Cols = 1
		for i := range rows {
			rows[i][0].Draw(tiles.At(left, 0, i))
			rows[i][1].Draw(tiles.At(right, 0, i))
		}
	})
}

func render(w io.Writer, f Format, width, height vg.Length, draw1 func(draw.Canvas)) error {
	switch f {
	case SVG:
		c := vgsvg.New(width, height)
		draw1(draw.New(c))
		_, err := c.WriteTo(w)
		return err
	case PNG:
		c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96))
		dc := draw.New(c)
		// A white background: transparent PNGs read badly in dark viewers.
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		draw1(dc)
		_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
		return err
	}
	return fmt.Errorf("plot format %q is not png or svg", f)
}

func colorOf(i int) color.Color { return plotutil.Color(i) }

// lines draws one line per GPU; only the first row carries the legend
// (the box plots beside every row name the GPUs in the same colors), with
// headroom above the data so that it hides nothing.
func lines(m Metric, legend bool) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = m.Title + " (" + m.Unit + ")"
	p.X.Tick.Marker = plot.TimeTicks{Format: "01-02\n15:04"}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, s := range m.Series {
		var segs []plotter.XYs
		var cur plotter.XYs
		for k, v := range s.Values {
			if math.IsNaN(v) {
				if len(cur) > 0 {
					segs = append(segs, cur)
					cur = nil
				}
				continue
			}
			cur = append(cur, plotter.XY{X: float64(s.T[k].Unix()), Y: v})
		}
		if len(cur) > 0 {
			segs = append(segs, cur)
		}
		for k, seg := range segs {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, err
			}
			l.Color = colorOf(i)
			l.Width = vg.Points(1.2)
			p.Add(l)
			if k == 0 && legend {
				p.Legend.Add(s.Name, l)
			}
		}
	}
	p.Y.Min = 0
	top := m.Max
	if top == 0 {
		// Headroom so a flat line at the maximum is not drawn on the frame.
		top = math.Max(p.Y.Max*1.15, 1)
	}
	p.Y.Max = top
	if legend {
		rows := float64(len(m.Series))
		p.Y.Max *= 1 + math.Min(0.12*rows, 1)
	}
	if m.Max > 0 {
		// Ticks only within the real range; the headroom is the legend's.
		p.Y.Tick.Marker = rangeTicks{max: m.Max}
	}
	return p, nil
}

// rangeTicks labels 0..max in quarters, for axes with legend headroom above
// a fixed maximum (100 % must not read 120 %).
type rangeTicks struct{ max float64 }

func (r rangeTicks) Ticks(_, _ float64) []plot.Tick {
	var t []plot.Tick
	for i := 0; i <= 4; i++ {
		v := r.max * float64(i) / 4
		t = append(t, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return t
}

func boxes(m Metric) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = m.Unit
	p.Title.Text = "distribution"
	var names []string
	for i, s := range m.Series {
		var vals plotter.Values
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				vals = append(vals, v)
			}
		}
		names = append(names, s.Name)
		if len(vals) == 0 {
			continue
		}
		b, err := plotter.NewBoxPlot(vg.Points(14), float64(i), vals)
		if err != nil {
			return nil, err
		}
		b.FillColor = colorOf(i)
		p.Add(b)
	}
	p.NominalX(names...)
	p.Y.Min = 0
	if m.Max > 0 {
		p.Y.Max = m.Max
	} else {
		p.Y.Max = math.Max(p.Y.Max*1.15, 1) // the same headroom as the lines beside
	}
	return p, nil
}

// Stack is one team's GPU-hours per period, drawn in Color ("#rrggbb",
// TeamColors; "" takes the next of plotutil's colors).
type Stack struct {
	Name   string
	Color  string
	Values []float64
}

// Bars draws GPU-hours per period as bars stacked by team, the biggest
// team at the bottom, with the legend in the stacking order.
func Bars(w io.Writer, f Format, title, yLabel string, periods []string, stacks []Stack) error {
	if len(periods) == 0 {
		return fmt.Errorf("plot %s: no periods", title)
	}
	// Blank axes would pass for a chart of an idle cluster: refuse them.
	if total(stacks) == 0 {
		return fmt.Errorf("no %s in any period: %w", yLabel, ErrEmpty)
	}
	sort.SliceStable(stacks, func(i, j int) bool { return sum(stacks[i].Values) > sum(stacks[j].Values) })
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Title.Padding = vg.Points(8)
	barW := vg.Points(math.Max(8, math.Min(80, 600/float64(len(periods)))))
	var below *plotter.BarChart
	var bars []*plotter.BarChart
	for i, s := range stacks {
		b, err := plotter.NewBarChart(plotter.Values(s.Values), barW)
		if err != nil {
			return fmt.Errorf("plot %s: %w", title, err)
		}
		b.Color = colorOf(i)
		if s.Color != "" {
			b.Color = rgb(s.Color)
		}
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		bars = append(bars, b)
	}
	// The legend lists teams top to bottom as the stack shows them.
	for i := len(bars) - 1; i >= 0; i-- {
		p.Legend.Add(stacks[i].Name, bars[i])
	}
	p.NominalX(periods...)
	// Room on both sides so the outer bars are not cut by the frame.
	p.X.Min, p.X.Max = -0.7, float64(len(periods))-0.3
	if len(periods) > 16 {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	// Headroom for the legend in the top right corner.
	var top float64
	for k := range periods {
		var t float64
		for _, s := range stacks {
			t += s.Values[k]
		}
		top = math.Max(top, t)
	}
	p.Y.Min = 0
	p.Y.Max = math.Max(top, 1) * (1.1 + 0.06*float64(len(stacks)))
	return render(w, f, 11*vg.Inch, 6*vg.Inch, func(dc draw.Canvas) { p.Draw(dc) })
}

// ErrEmpty is a chart with nothing to draw.
var ErrEmpty = errors.New("nothing to draw")

func total(stacks []Stack) float64 {
	t := 0.0
	for _, s := range stacks {
		t += sum(s.Values)
	}
	return t
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
