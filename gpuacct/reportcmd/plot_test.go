package reportcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlotReportEmpty: a window with no GPU usage is said in one line,
// exit 1, and leaves no file of blank axes; a window with usage draws.
func TestPlotReportEmpty(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3600}}, now)
	tests := []struct {
		name   string
		window []string
		code   int
		want   string // in the error, or stdout when the plot is drawn
	}{
		{"no usage in the window", []string{"--start", "2020-01-01", "--end", "2020-02-01"}, 1, "no GPU-hours in any period: nothing to draw"},
		{"usage in the window", []string{"--start", "now-3days", "--period", "day"}, 0, "x.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.png")
			d, stdout, _ := testDeps(now, nil)
			err := run(t, d, append([]string{"plot", "--report", "-o", out, dbOpt(path)}, tt.window...)...)
			if code := exitCode(err); code != tt.code {
				t.Fatalf("exit %d (%v), want %d", code, err, tt.code)
			}
			_, statErr := os.Stat(out)
			if tt.code != 0 {
				if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
					t.Errorf("error %q, want one line with %q", msg, tt.want)
				}
				if statErr == nil {
					t.Errorf("an empty plot left %s behind", out)
				}
				return
			}
			if statErr != nil || !strings.Contains(stdout.String(), tt.want) {
				t.Errorf("plot: %v, printed %q", statErr, stdout.String())
			}
		})
	}
}
