package boardcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// runQueue runs gpuacct status over the fixture with Slurm's queue q,
// and returns the exit code, stdout, stderr and the timeout Queue had.
func runQueue(t *testing.T, q slurmstate.Queue, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte("[cluster]\nname = \"c1\"\n[board]\nslurm_timeout = \"7s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	var asked time.Duration
	d := Deps{Stdout: &out, Stderr: &errb, Now: func() time.Time { return now }, Loc: time.UTC,
		Getenv: func(k string) string {
			if k == "GPUSUITE_CONFIG" {
				return cfg
			}
			return ""
		},
		Slurm: func(context.Context, time.Duration) (slurmstate.State, error) { return slurmFixture(), nil },
		Queue: func(_ context.Context, timeout time.Duration) (slurmstate.Queue, error) {
			asked = timeout
			return q, nil
		},
		Notes: func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return nil, nil }}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()},
		Commands: []*cli.Command{FreeCommand(d), StatusCommand(d)}}
	cliwire.Prepare(app)
	err := app.Run(append([]string{"gpuacct"}, args...))
	return cliwire.Finish("gpuacct", &errb, err), out.String(), errb.String(), asked
}

func TestStatusQueue(t *testing.T) {
	live := fixture(t)
	q := slurmstate.Queue{At: now, Rows: []slurmstate.QueueRow{
		{Partition: "gpu", Model: "h100", Jobs: 3, GPUs: 12, Oldest: now.Add(-(2*time.Hour + 5*time.Minute)), NextStart: now.Add(40 * time.Minute)},
		{Partition: "long", Model: slurmstate.AnyModel, Jobs: 1, GPUs: 2, Oldest: now.Add(-30 * time.Second)},
	}, Unread: 4}
	for _, tc := range []struct {
		name string
		q    slurmstate.Queue
		args []string
		code int
		want string
	}{
		{"table", q, nil, 0, `Pending jobs asking for GPUs at 2026-11-26 06:00:00 UTC

PARTITION  MODEL  JOBS  GPUS  OLDEST WAIT  SLURM'S NEXT START
gpu        h100      3    12  2h05m        2026-11-26 06:40:00 UTC
long       any       1     2  30s          -
4 more pending jobs not read
`},
		{"empty", slurmstate.Queue{At: now}, nil, 0, ""},
		{"json", q, []string{"--format", "json"}, 0, ""},
		{"without slurm", q, []string{"--no-slurm"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs, asked := runQueue(t, tc.q, append([]string{"status", "--live-dir", live, "--queue"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errs)
			}
			switch tc.name {
			case "table":
				if d := cmp.Diff(tc.want, out); d != "" {
					t.Errorf("status --queue (-want +got):\n%s", d)
				}
				if asked != 7*time.Second {
					t.Errorf("squeue bounded by %s, want board.slurm_timeout's 7s", asked)
				}
			case "empty":
				if !strings.Contains(out, "no pending job asks for GPUs") {
					t.Errorf("empty queue printed %q", out)
				}
			case "json":
				if !strings.Contains(out, `"oldest_submit": "2026-11-26T03:55:00Z"`) || !strings.Contains(out, `"unread": 4`) {
					t.Errorf("status --queue --format json printed %s", out)
				}
			case "without slurm":
				if !strings.Contains(errs, "--queue asks Slurm") {
					t.Errorf("stderr %q, want --queue asks Slurm", errs)
				}
			}
		})
	}
}
