package demo

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The whole pipeline prints the weekly team report, one job's detail and
// the paths of plots that exist.
func TestPipeline(t *testing.T) {
	var out bytes.Buffer
	if err := Pipeline(context.Background(), &out, PipelineOptions{Dir: t.TempDir(), Nodes: 2, GPUs: 4, Weeks: 1, Seed: 3, Width: 120}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, w := range []string{"GPU usage by team, per week", "TOTAL", "$ gpuacct job ", "UTILIZATION OVER THE JOB", "Notes:", "Plots: "} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	_, plots, _ := strings.Cut(s, "Plots: ")
	for _, p := range strings.Fields(plots) {
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
}
