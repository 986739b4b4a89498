package web

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBarsWithLevel: the capacity level is one flat segment per bucket at
// its value on the bars' axis (which grows to hold it), titled with the
// bucket and value; a NaN bucket has none; without a level nothing is
// drawn over the bars.
func TestBarsWithLevel(t *testing.T) {
	series := []barSeries{{Name: "vision", Color: "#4e79a7", Values: []float64{10, 20, 0}}}
	plain := bars("x", "GPU-h", []string{"a", "b", "c"}, series, true)
	if len(plain.Lines) != 0 || len(plain.Legend) != 1 {
		t.Fatalf("without a level: %d lines, legend %v", len(plain.Lines), plain.Legend)
	}
	level := &barSeries{Name: "GPU capacity (Slurm)", Color: capacityColor, Values: []float64{96, math.NaN(), 96}}
	c := barsWithLevel("x", "GPU-h", []string{"a", "b", "c"}, series, true, level)
	var titles []string
	for _, l := range c.Lines {
		titles = append(titles, l.Title)
		if l.Color != capacityColor {
			t.Errorf("segment %q drawn in %s", l.Title, l.Color)
		}
	}
	if d := cmp.Diff([]string{"a · GPU capacity (Slurm): 96.0 GPU-h", "c · GPU capacity (Slurm): 96.0 GPU-h"}, titles); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
	// The axis tops at 100 (96 nice-rounded): 96 sits 4 % below the top.
	top := c.PlotY
	if len(c.YTicks) == 0 || c.YTicks[len(c.YTicks)-1].Label != "100" {
		t.Fatalf("y axis %v, want it to reach 100", c.YTicks)
	}
	want := top + 0.04*c.PlotH
	var y float64
	if _, err := fmtSscan(c.Lines[0].Points, &y); err != nil || math.Abs(y-want) > 0.1 {
		t.Errorf("segment %q: y %.1f, want %.1f", c.Lines[0].Points, y, want)
	}
	if legend := c.Legend[len(c.Legend)-1]; legend.Name != level.Name || legend.Color != capacityColor {
		t.Errorf("legend %v lacks the level", c.Legend)
	}
	// Capacity alone (no usage yet) still draws.
	empty := barsWithLevel("x", "GPU-h", []string{"a"}, []barSeries{{Name: "v", Values: []float64{0}}}, true, &barSeries{Name: "cap", Values: []float64{5}})
	if empty.Empty != "" || len(empty.Lines) != 1 {
		t.Errorf("capacity without usage: empty %q, %d lines", empty.Empty, len(empty.Lines))
	}
}

// fmtSscan reads the y of a segment's first point "x,y ...".
func fmtSscan(points string, y *float64) (int, error) {
	var x float64
	return fmt.Sscanf(points, "%f,%f", &x, y)
}
