package report

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestPlotReportTeamColors: gpuacct plot --report draws each team in the
// color the dashboard gives it (plot.TeamColors over KnownTeams, the
// dashboard's one assignment). The plots once took plotutil's colors by
// stacking order, so a team changed color between the page and the PNG.
func TestPlotReportTeamColors(t *testing.T) {
	t0 := reportfixture.T0
	jobs := []reportfixture.Job{
		{ID: 1, User: "ann", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 4, Start: t0 + 3600, End: t0 + 9*3600},
		{ID: 2, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 2, Start: t0 + 3600, End: t0 + 5*3600},
		{ID: 3, User: "cy", Acct: "audio", Part: "gpu", Node: "n3", GPUs: 1, Start: t0 + 3600, End: t0 + 4*3600},
	}
	ctx := context.Background()
	loc := reportfixture.BuildLedger(t, jobs, time.Unix(t0+2*86400, 0))
	db, err := OpenDB(ctx, loc, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := &teams.Mapping{}
	known, err := db.KnownTeams(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	colors := plot.TeamColors(known)
	path := filepath.Join(t.TempDir(), "teams.png")
	w := timespec.Window{Start: time.Unix(t0, 0).UTC(), End: time.Unix(t0+2*86400, 0).UTC()}
	if err := db.PlotReport(ctx, Request{Window: w, Period: timespec.Day, Mapping: m}, path); err != nil {
		t.Fatal(err)
	}
	counts := pixelCounts(t, path)
	for _, team := range []string{"vision", "nlp", "audio"} {
		hex := plot.TeamColor(colors, team)
		if hex == plot.Unassigned {
			t.Fatalf("team %s has no color of its own in %v", team, colors)
		}
		if n := counts[rgba(t, hex)]; n < 50 {
			t.Errorf("team %s: %d pixels of its dashboard color %s in the plot; want its bar in it", team, n, hex)
		}
	}
}

func pixelCounts(t *testing.T, path string) map[color.RGBA]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out[rgbaAt(img, x, y)]++
		}
	}
	return out
}

func rgbaAt(img image.Image, x, y int) color.RGBA {
	r, g, b, a := img.At(x, y).RGBA()
	return color.RGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: uint8(a >> 8)}
}

func rgba(t *testing.T, hex string) color.RGBA {
	t.Helper()
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}
