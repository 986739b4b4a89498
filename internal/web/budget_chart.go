package web

import (
	"fmt"
	"math"
	"strings"
)

// idealColor draws a budget's ideal line: grey, beside the team's colour.
const idealColor = "#8a8a8a"

// burnChart is a budget's burn-down as a chart: the budget's level
// (capacityColor), the ideal line from nothing at the period's start to
// the whole amount at its end, and the team's use summed day by day.
// days are the period's day labels, used the sum at each past day's end
// (as many as have begun), amount the budget, unit its unit; elapsed is
// the share of the period gone, where the last day's point is drawn.
func burnChart(label, unit string, days []string, used []float64, amount, elapsed float64, color string) chart {
	c := newChart(label, unit)
	c.Legend = []legendItem{{Name: "used", Color: color}, {Name: "ideal", Color: idealColor}, {Name: "budget", Color: capacityColor}}
	n := len(days)
	if n == 0 || amount <= 0 {
		c.Empty = "No budget period to draw."
		return c
	}
	maxV := amount
	for _, v := range used {
		maxV = math.Max(maxV, v)
	}
	top, step := niceMax(maxV, 4)
	c.yAxis(top, step)
	x := func(i int) float64 { return c.PlotX + float64(i)/float64(n)*c.PlotW }
	y := func(v float64) float64 { return c.PlotY + c.PlotH - v/top*c.PlotH }
	c.Lines = append(c.Lines,
		polyline{Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(0), y(amount), x(n), y(amount)), Color: capacityColor,
			Title: fmt.Sprintf("budget: %s %s", amountOf(amount), unit)},
		polyline{Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(0), y(0), x(n), y(amount)), Color: idealColor,
			Title: fmt.Sprintf("ideal: %s %s a day", hoursOf(amount/float64(n)), unit)})
	if len(used) > 0 {
		pts := []string{fmt.Sprintf("%.1f,%.1f", x(0), y(0))}
		for i, v := range used[:min(len(used), n)] {
			px := x(i + 1)
			if i == len(used)-1 {
				// the day under way: its point is now
				px = math.Min(px, c.PlotX+elapsed*c.PlotW)
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, y(v)))
		}
		last := used[min(len(used), n)-1]
		c.Lines = append(c.Lines, polyline{Points: strings.Join(pts, " "), Color: color,
			Title: fmt.Sprintf("used by %s: %s %s", days[min(len(used), n)-1], hoursOf(last), unit)})
	}
	every := int(math.Ceil(float64(n) / 12))
	for i := 0; i < n; i += every {
		c.XTicks = append(c.XTicks, tick{Pos: x(i) + c.PlotW/float64(n)/2, Label: days[i], Anchor: "middle"})
	}
	return c
}
