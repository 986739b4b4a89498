package web

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// chart is an SVG chart laid out in Go and drawn by the chart template:
// no script and no library, so it prints and renders without JavaScript.
type chart struct {
	W, H                       float64
	PlotX, PlotY, PlotW, PlotH float64
	Rects                      []rect
	Lines                      []polyline
	YTicks, XTicks             []tick
	Legend                     []legendItem
	Right, Bottom              float64 // plot area's right and bottom edges
	YLabelX, XLabelY           float64
	YUnit                      string
	Label                      string // aria-label
	Empty                      string // shown instead when there is nothing to draw
}

type rect struct {
	X, Y, W, H float64
	Color      string
	Opacity    float64
	Title      string
}

type polyline struct {
	Points string
	Color  string
	Title  string
}

type tick struct {
	Pos    float64
	Label  string
	Anchor string // text-anchor of an x label: start, middle or end
}

type legendItem struct {
	Name, Color, URL string
	Pale             bool
}

// barSeries is one stacked (or overlaid) series of a bar chart.
type barSeries struct {
	Name, Color, URL string
	Values           []float64
}

func newChart(label, unit string) chart {
	c := chart{W: 900, H: 262, PlotX: 60, PlotY: 22, PlotW: 830, PlotH: 208, YUnit: unit, Label: label}
	c.Right, c.Bottom = c.PlotX+c.PlotW, c.PlotY+c.PlotH
	c.YLabelX, c.XLabelY = c.PlotX-8, c.Bottom+18
	return c
}

// niceMax is the top of the y axis and its step: 1, 2 or 5 × 10^k.
func niceMax(v float64, ticks int) (top, step float64) {
	if v <= 0 || math.IsNaN(v) {
		return 1, 0.25
	}
	raw := v / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(v/step) * step, step
}

func (c *chart) yAxis(top, step float64) {
	for v := 0.0; v <= top+step/2; v += step {
		dec := 0
		if step < 1 {
			dec = 2
		}
		c.YTicks = append(c.YTicks, tick{Pos: c.PlotY + c.PlotH - v/top*c.PlotH, Label: thousands(v, dec)})
	}
}

// bars lays out bars per bucket: stacked, or the first series as a pale
// full bar with the second drawn inside it (allocated vs used).
func bars(label, unit string, buckets []string, series []barSeries, stacked bool) chart {
	return barsWithLevel(label, unit, buckets, series, stacked, nil)
}

// capacityColor draws the capacity level: neither a team's colour nor
// the unassigned grey, and dark enough on both backgrounds.
const capacityColor = "#7f3c8d"

// barsWithLevel is bars with level (nil: none) drawn over them, one flat
// segment across each bucket: the cluster's GPU capacity over the
// allocated bars. A bucket whose level is NaN has no segment.
func barsWithLevel(label, unit string, buckets []string, series []barSeries, stacked bool, level *barSeries) chart {
	c := newChart(label, unit)
	n := len(buckets)
	maxV := 0.0
	if level != nil {
		for _, v := range level.Values {
			if !math.IsNaN(v) {
				maxV = math.Max(maxV, v)
			}
		}
	}
	for i := 0; i < n; i++ {
		tot := 0.0
		for _, s := range series {
			if stacked {
				tot += s.Values[i]
			} else {
				tot = math.Max(tot, s.Values[i])
			}
		}
		maxV = math.Max(maxV, tot)
	}
	for k, s := range series {
		c.Legend = append(c.Legend, legendItem{Name: s.Name, Color: s.Color, URL: s.URL, Pale: !stacked && k == 0})
	}
	if n == 0 || maxV == 0 {
		c.Empty = "No GPU usage recorded in this window."
		return c
	}
	top, step := niceMax(maxV, 4)
	c.yAxis(top, step)
	slot := c.PlotW / float64(n)
	bw := math.Max(1, math.Min(slot*0.74, 48))
	for i := 0; i < n; i++ {
		x := c.PlotX + float64(i)*slot + (slot-bw)/2
		base := 0.0
		for k, s := range series {
			v := s.Values[i]
			if v <= 0 {
				continue
			}
			h := v / top * c.PlotH
			r := rect{X: x, W: bw, H: h, Color: s.Color, Opacity: 1, Title: fmt.Sprintf("%s · %s: %s %s", buckets[i], s.Name, hoursOf(v), unit)}
			switch {
			case stacked:
				r.Y = c.PlotY + c.PlotH - base - h
				base += h
			case k == 0:
				r.Y, r.Opacity = c.PlotY+c.PlotH-h, 0.35
			default:
				inner := bw * 0.56
				r.X, r.W, r.Y = x+(bw-inner)/2, inner, c.PlotY+c.PlotH-h
			}
			c.Rects = append(c.Rects, r)
		}
	}
	if level != nil {
		// One flat segment per bucket, titled with its value: the level
		// is read per bucket, as the bars are.
		c.Legend = append(c.Legend, legendItem{Name: level.Name, Color: level.Color})
		for i := 0; i < n && i < len(level.Values); i++ {
			v := level.Values[i]
			if math.IsNaN(v) {
				continue
			}
			y := c.PlotY + c.PlotH - v/top*c.PlotH
			x0, x1 := c.PlotX+float64(i)*slot, c.PlotX+float64(i+1)*slot
			c.Lines = append(c.Lines, polyline{Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x0, y, x1, y), Color: level.Color,
				Title: fmt.Sprintf("%s · %s: %s %s", buckets[i], level.Name, hoursOf(v), unit)})
		}
	}
	every := int(math.Ceil(float64(n) / 12))
	for i := 0; i < n; i += every {
		c.XTicks = append(c.XTicks, tick{Pos: c.PlotX + (float64(i)+0.5)*slot, Label: buckets[i], Anchor: "middle"})
	}
	return c
}

// linePoint is one value of a line at a time (ms); nil is a gap.
type linePoint struct {
	T int64
	V *float64
}

type lineSeries struct {
	Name, Color string
	Points      []linePoint
}

// lines lays out one line per series over [from, to) ms, averaged into
// at most one point per two pixels, broken where samples are missing.
func lines(label, unit string, from, to int64, yMax float64, series []lineSeries, loc *time.Location) chart {
	c := newChart(label, unit)
	for _, s := range series {
		c.Legend = append(c.Legend, legendItem{Name: s.Name, Color: s.Color})
	}
	have := false
	for _, s := range series {
		for _, p := range s.Points {
			if p.V != nil {
				have = true
			}
		}
	}
	if !have || to <= from {
		c.Empty = "No samples for this job (raw samples are kept for store.sample_retention)."
		return c
	}
	if yMax <= 0 {
		for _, s := range series {
			for _, p := range s.Points {
				if p.V != nil {
					yMax = math.Max(yMax, *p.V)
				}
			}
		}
	}
	top, step := niceMax(yMax, 4)
	if unit == "%" {
		top, step = 100, 25
	}
	for v := 0.0; v <= top+step/2; v += step {
		c.YTicks = append(c.YTicks, tick{Pos: c.PlotY + c.PlotH - v/top*c.PlotH, Label: thousands(v, 0)})
	}
	bins := int(c.PlotW / 2)
	span := float64(to - from)
	for _, s := range series {
		sum := make([]float64, bins)
		cnt := make([]int, bins)
		for _, p := range s.Points {
			if p.V == nil {
				continue
			}
			i := int(float64(p.T-from) / span * float64(bins))
			if i < 0 || i >= bins {
				continue
			}
			sum[i] += *p.V
			cnt[i]++
		}
		// A gap of more than a few empty bins breaks the line.
		var seg []string
		gap := 0
		flush := func() {
			if len(seg) > 1 {
				c.Lines = append(c.Lines, polyline{Points: strings.Join(seg, " "), Color: s.Color, Title: s.Name})
			}
			seg = seg[:0]
		}
		lastBin := -1
		for i := 0; i < bins; i++ {
			if cnt[i] == 0 {
				gap++
				continue
			}
			if lastBin >= 0 && gap > 6 {
				flush()
			}
			gap = 0
			lastBin = i
			v := sum[i] / float64(cnt[i])
			x := c.PlotX + (float64(i)+0.5)/float64(bins)*c.PlotW
			y := c.PlotY + c.PlotH - math.Min(v, top)/top*c.PlotH
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		flush()
	}
	layout := "15:04"
	if time.Duration(to-from)*time.Millisecond > 36*time.Hour {
		layout = "01-02 15:04"
	}
	for k := 0; k <= 5; k++ {
		t := from + int64(float64(k)/5*span)
		anchor := "middle"
		switch k {
		case 0:
			anchor = "start"
		case 5:
			anchor = "end"
		}
		c.XTicks = append(c.XTicks, tick{Pos: c.PlotX + float64(k)/5*c.PlotW, Label: time.UnixMilli(t).In(loc).Format(layout), Anchor: anchor})
	}
	return c
}
