package boardcmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// TestSlurmFile: gpuacct free and status read Slurm's view from
// --slurm-file (GPUSUITE_SLURM_FILE, board.slurm_file; flag > env >
// file) instead of asking Slurm, and count the demo's board's 3 free
// GPUs; --no-slurm still skips Slurm. A missing or garbage file is a
// failure (exit 1) in one line that names it, never a board silently
// without Slurm; an old one is shown with a warning.
func TestSlurmFile(t *testing.T) {
	dir, slurm, notes := demoLike(t)
	views := t.TempDir()
	good, old := filepath.Join(views, "slurm.json"), filepath.Join(views, "old.json")
	if err := slurmstate.WriteFile(good, slurm); err != nil {
		t.Fatal(err)
	}
	stale := slurm
	stale.At = now.Add(-10 * time.Minute)
	if err := slurmstate.WriteFile(old, stale); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(views, "garbage.json")
	if err := os.WriteFile(garbage, []byte("slurm_load_node error\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(views, "gone.json")
	for _, tc := range []struct {
		name string
		conf string // [board] lines of the config file
		env  string // GPUSUITE_SLURM_FILE
		args []string
		code int
		// want is in stdout (exit 0) or is the one line of stderr.
		want []string
		// asked: Slurm itself is asked (no file in force).
		asked bool
	}{
		{name: "flag", args: []string{"free", "--live-dir", dir, "--slurm-file", good}, want: []string{"3 GPU(s) free"}},
		{name: "flag after the rest", args: []string{"status", "--live-dir", dir, "--format", "json", "--slurm-file", good}, want: []string{`"free": 3`}},
		{name: "env", env: good, args: []string{"free", "--live-dir", dir}, want: []string{"3 GPU(s) free"}},
		{name: "config", conf: "slurm_file = \"" + good + "\"", args: []string{"free", "--live-dir", dir}, want: []string{"3 GPU(s) free"}},
		{name: "env over config", conf: "slurm_file = \"" + garbage + "\"", env: good, args: []string{"free", "--live-dir", dir}, want: []string{"3 GPU(s) free"}},
		{name: "flag over env", env: garbage, args: []string{"free", "--slurm-file", good, "--live-dir", dir}, want: []string{"3 GPU(s) free"}},
		{name: "no-slurm over env", env: garbage, args: []string{"free", "--live-dir", dir, "--no-slurm"}, want: []string{"WARNING: Slurm not asked"}},
		{name: "none: Slurm asked", args: []string{"free", "--live-dir", dir}, want: []string{"3 GPU(s) free"}, asked: true},
		{name: "old", args: []string{"free", "--live-dir", dir, "--slurm-file", old}, want: []string{"WARNING: Slurm's view in " + old + " is 10m0s old", "3 GPU(s) free"}},
		{name: "missing", args: []string{"free", "--live-dir", dir, "--slurm-file", missing}, code: 1,
			want: []string{`gpuacct: free: read Slurm's view "` + missing + `": `, "no such file"}},
		{name: "garbage", args: []string{"status", "--slurm-file", garbage, "--live-dir", dir}, code: 1,
			want: []string{`gpuacct: status: read Slurm's view "` + garbage + `": not a Slurm view file`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GPUSUITE_SLURM_FILE", tc.env)
			asked := false
			readSlurm := func(context.Context, time.Duration) (slurmstate.State, error) { asked = true; return slurm, nil }
			if !tc.asked {
				readSlurm = func(context.Context, time.Duration) (slurmstate.State, error) {
					asked = true
					return slurmstate.State{}, errors.New("Slurm asked")
				}
			}
			code, out, errs := runConf(t, "[cluster]\nname = \"c1\"\n[board]\n"+tc.conf+"\n", readSlurm, notes, tc.args...)
			if code != tc.code || asked != tc.asked {
				t.Fatalf("exit %d, Slurm asked %v; want %d, %v\nstdout:\n%s\nstderr:\n%s", code, asked, tc.code, tc.asked, out, errs)
			}
			got := out
			if tc.code != 0 {
				got = errs
				if strings.Count(errs, "\n") != 1 {
					t.Errorf("stderr %q: want one line", errs)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("want %q in:\n%s", w, got)
				}
			}
		})
	}
}

// runConf runs gpuacct with the free and status commands at now, with
// the config file conf, as the process would.
func runConf(t *testing.T, conf string, slurm func(context.Context, time.Duration) (slurmstate.State, error), notes []board.Note, args ...string) (int, string, string) {
	t.Helper()
	return runApp(t, now, conf, os.Getenv, slurm,
		func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return notes, nil }, args...)
}
