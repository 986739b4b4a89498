package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"math"
	"strings"
	"testing"
	"time"
)

func TestFormatOf(t *testing.T) {
	for in, want := range map[string]Format{"a.png": PNG, "b.SVG": SVG, "c.jpg": "", "": ""} {
		got, err := FormatOf(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestJobAndBarsRender(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	var ts []time.Time
	var busy, gappy []float64
	for i := 0; i < 60; i++ {
		ts = append(ts, t0.Add(time.Duration(i)*time.Minute))
		busy = append(busy, 90)
		v := float64(i)
		if i%10 == 0 {
			v = math.NaN() // a missing sample is a gap, not a 0
		}
		gappy = append(gappy, v)
	}
	metrics := []Metric{
		{Title: "GPU utilization", Unit: "%", Max: 100, Series: []Series{{Name: "GPU 0", T: ts, Values: busy}, {Name: "GPU 1", T: ts, Values: gappy}}},
		{Title: "power", Unit: "W", Series: []Series{{Name: "GPU 0", T: ts, Values: busy}, {Name: "GPU 1", T: ts, Values: gappy}}},
	}
	stacks := []Stack{{Name: "vision", Values: []float64{10, 20}}, {Name: "nlp", Values: []float64{30, 5}}}
	for _, f := range []Format{PNG, SVG} {
		var job, bars bytes.Buffer
		if err := Job(&job, f, "job 1", metrics); err != nil {
			t.Fatal(err)
		}
		if err := Bars(&bars, f, "teams", "GPU-hours", []string{"W45", "W46"}, stacks); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string]*bytes.Buffer{"job": &job, "bars": &bars} {
			switch f {
			case PNG:
				img, err := png.Decode(bytes.NewReader(b.Bytes()))
				if err != nil || img.Bounds().Dx() < 600 {
					t.Errorf("%s png: %v %v", name, err, img)
				}
			case SVG:
				if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil || !strings.Contains(b.String(), "<svg") {
					t.Errorf("%s svg does not parse: %v", name, err)
				}
			}
		}
		if f == SVG && (!strings.Contains(bars.String(), "vision") || !strings.Contains(job.String(), "GPU 1")) {
			t.Error("legend names missing from the SVG")
		}
	}
	if err := Bars(&bytes.Buffer{}, PNG, "t", "y", nil, nil); err == nil {
		t.Error("no periods accepted")
	}
	if err := Job(&bytes.Buffer{}, PNG, "t", nil); err == nil {
		t.Error("no metrics accepted")
	}
}

// TestBarsEmpty: a window with no GPU-hours draws no blank axes; the
// caller is told there is nothing to draw.
func TestBarsEmpty(t *testing.T) {
	tests := []struct {
		name   string
		stacks []Stack
	}{
		{"no team", nil},
		{"only zeros", []Stack{{Name: "vision", Values: []float64{0, 0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			err := Bars(&b, PNG, "teams", "GPU-hours", []string{"2026-11-02", "2026-11-09"}, tt.stacks)
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("Bars = %v, want ErrEmpty", err)
			}
			if want := "no GPU-hours in any period: nothing to draw"; err.Error() != want {
				t.Errorf("Bars = %q, want %q", err, want)
			}
			if b.Len() != 0 {
				t.Errorf("Bars wrote %d bytes for an empty chart", b.Len())
			}
		})
	}
}
