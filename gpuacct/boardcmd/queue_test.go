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
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

// runQueue runs gpuacct status over the fixture with Slurm's queue q and
// the ledger's median waits read by waits (nil: none), and returns the
// exit code, stdout, stderr and the timeout Queue had.
func runQueue(t *testing.T, q slurmstate.Queue, waits func(context.Context, string, time.Duration, time.Time) ([]slurmstate.Wait, error), args ...string) (int, string, string, time.Duration) {
	t.Helper()
	return runQueueEnv(t, nil, q, waits, args...)
}

// runQueueEnv is runQueue in the environment env (LANG...).
func runQueueEnv(t *testing.T, env map[string]string, q slurmstate.Queue, waits func(context.Context, string, time.Duration, time.Time) ([]slurmstate.Wait, error), args ...string) (int, string, string, time.Duration) {
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
			return env[k]
		},
		Slurm: func(context.Context, time.Duration) (slurmstate.State, error) { return slurmFixture(), nil },
		Queue: func(_ context.Context, timeout time.Duration) (slurmstate.Queue, error) {
			asked = timeout
			return q, nil
		},
		Notes: func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return nil, nil },
		Waits: waits}
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
			code, out, errs, asked := runQueue(t, tc.q, nil, append([]string{"status", "--live-dir", live, "--queue"}, tc.args...)...)
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

// TestStatusQueueStarted: with a ledger (--db), status --queue adds the
// median wait from submit to start per GPU model and count of the runs
// that started over the last 7 days, as sacct gave their submit; json
// carries them as started_within.
func TestStatusQueueStarted(t *testing.T) {
	live := fixture(t)
	db := filepath.Join(t.TempDir(), "gpuacct.db")
	st, err := store.Open(context.Background(), store.At(db))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	// job id, GPUs, started before now, waited.
	runs := []struct {
		id          uint64
		gpus        int
		ago, waited time.Duration
	}{{1, 4, 50 * time.Hour, 3 * time.Minute}, {2, 4, 40 * time.Hour, 7 * time.Minute}, {3, 1, 8 * 24 * time.Hour, time.Hour}}
	for _, r := range runs {
		for _, k := range []record.Kind{record.JobStart, record.JobEnd} {
			e := &record.Event{Schema: record.EventSchema, Kind: k, Time: now.Add(-r.ago), Cluster: "c1", Node: "n1"}
			if k == record.JobEnd {
				e.Time = e.Time.Add(time.Hour)
			}
			e.Job.ID, e.Job.User, e.Job.Account, e.Job.Partition = r.id, "ann", "physics", "gpu"
			for i := range r.gpus {
				e.Job.GPUs = append(e.Job.GPUs, i)
				e.GPUs = append(e.GPUs, record.GPU{Minor: i, Model: "H100"})
			}
			e.Key = record.EventKey("c1", r.id, 0, "n1", k)
			if err := b.Event(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	todo, err := b.Unreconciled(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range todo {
		r := runs[j.JobID-1]
		start := now.Add(-r.ago)
		if err := b.Reconcile(j.Row, store.SlurmTimes{Start: start, End: start.Add(time.Hour), State: "completed", Submit: start.Add(-r.waited)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	q := slurmstate.Queue{At: now, Rows: []slurmstate.QueueRow{{Partition: "gpu", Model: "h100", Jobs: 1, GPUs: 4, Oldest: now.Add(-time.Minute)}}}
	code, out, errs, _ := runQueue(t, q, LedgerWaits, "status", "--live-dir", live, "--db", db, "--queue")
	want := `Pending jobs asking for GPUs at 2026-11-26 06:00:00 UTC

PARTITION  MODEL  JOBS  GPUS  OLDEST WAIT  SLURM'S NEXT START
gpu        h100      1     4  1m           -

Started within (median wait from submit, last 7 days)

MODEL  GPUS ASKED  JOBS  STARTED WITHIN
H100            4     2  5m
`
	if d := cmp.Diff(want, out); d != "" || code != 0 {
		t.Errorf("status --queue with a ledger: exit %d, stderr %s (-want +got):\n%s", code, errs, d)
	}
	code, out, errs, _ = runQueue(t, q, LedgerWaits, "status", "--live-dir", live, "--db", db, "--queue", "--format", "json")
	if !strings.Contains(out, `"started_within": [`) || !strings.Contains(out, `"median_wait_s": 300`) || code != 0 {
		t.Errorf("status --queue --format json: exit %d, stderr %s, printed %s", code, errs, out)
	}
}

// status --queue in Japanese (LANG=ja_JP.UTF-8): the golden output,
// both tables' columns aligned by display width.
func TestStatusQueueJapanese(t *testing.T) {
	live := fixture(t)
	q := slurmstate.Queue{At: now, Rows: []slurmstate.QueueRow{
		{Partition: "gpu", Model: "h100", Jobs: 3, GPUs: 12, Oldest: now.Add(-(2*time.Hour + 5*time.Minute)), NextStart: now.Add(40 * time.Minute)},
		{Partition: "long", Model: slurmstate.AnyModel, Jobs: 1, GPUs: 2, Oldest: now.Add(-30 * time.Second)},
	}, Unread: 4}
	waits := func(context.Context, string, time.Duration, time.Time) ([]slurmstate.Wait, error) {
		return []slurmstate.Wait{{Model: "H100", GPUs: 4, Jobs: 2, MedianS: 300}}, nil
	}
	env := map[string]string{"LANG": "ja_JP.UTF-8"}
	db := filepath.Join(t.TempDir(), "gpuacct.db")
	code, out, errs, _ := runQueueEnv(t, env, q, waits, "status", "--live-dir", live, "--db", db, "--queue")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	cmdline.Golden(t, filepath.Join("testdata", "status_queue_ja.golden"), out, *update)
	started := strings.Index(out, "開始までの時間(")
	if started < 0 {
		t.Fatalf("no started-within table in\n%s", out)
	}
	checkAligned(t, out[:started])
	checkAligned(t, out[started:])
	for _, en := range []string{"Pending", "JOBS", "OLDEST", "Started within", "more pending"} {
		if strings.Contains(out, en) {
			t.Errorf("still %q in\n%s", en, out)
		}
	}
}
