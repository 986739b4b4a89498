package boardcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var now = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

func gpu(i int, model string, util uint32, used uint64, jobs ...record.LiveJob) record.LiveGPU {
	return record.LiveGPU{Index: i, UUID: "GPU-" + model + "-" + string(rune('a'+i)), Model: model, Util: u32(util),
		MemUsedMiB: u64(used), MemTotalMiB: u64(81559), Jobs: jobs}
}

// fixture writes the live directory: n1 busy, idle and free GPUs; n2 free
// in a reservation; n3 stale; n5 a foreign process. n4 (drained) has no
// snapshot.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fresh := now.Add(-5 * time.Second)
	n1 := record.Live{Node: "n1", Time: fresh, GPUs: []record.LiveGPU{
		gpu(0, "NVIDIA H100", 0, 0), gpu(1, "NVIDIA H100", 0, 0),
		gpu(2, "NVIDIA H100", 0, 512, record.LiveJob{Job: 7, User: "alice", Account: "ml", Start: now.Add(-2 * time.Hour)}),
		gpu(3, "NVIDIA H100", 93, 40960, record.LiveJob{Job: 8, Restart: 1, User: "bob", Account: "vision", Start: now.Add(-(76*time.Hour + 5*time.Minute))}),
	}}
	idle := now.Add(-25 * time.Minute)
	n1.GPUs[2].IdleSince = &idle
	n1.GPUs[3].Procs = []record.LiveProc{{PID: 4242, User: "bob", Job: 8, MemUsedMiB: 40900}}
	n2 := record.Live{Node: "n2", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA A100", 0, 0)}}
	n3 := record.Live{Node: "n3", Time: now.Add(-10 * time.Minute), GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0)}}
	n5 := record.Live{Node: "n5", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 55, 2048)}}
	n5.GPUs[0].Procs = []record.LiveProc{{PID: 999, User: "mallory", MemUsedMiB: 2000}}
	for _, l := range []record.Live{n1, n2, n3, n5} {
		l.Schema, l.Cluster, l.Interval = record.LiveSchema, "c1", 10
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, record.LiveFileName(l.Node)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func slurmFixture() slurmstate.State {
	node := func(name string, cond slurmstate.Condition, n int, parts ...string) slurmstate.Node {
		return slurmstate.Node{Name: name, Condition: cond, Partitions: parts, GPUs: []slurmstate.GPU{{Type: "h100", Count: n}}, GPUCount: n}
	}
	n4 := node("n4", slurmstate.Drained, 2, "gpu")
	n4.Reason = "xid 79 on gpu 1"
	return slurmstate.State{At: now, Nodes: []slurmstate.Node{
		node("n1", slurmstate.Mixed, 4, "gpu", "long"), node("n2", slurmstate.Idle, 1, "gpu"),
		node("n3", slurmstate.Idle, 1, "gpu"), n4, node("n5", slurmstate.Mixed, 1, "gpu"),
	}, Reservations: []slurmstate.Reservation{{Name: "vision-demo", Start: now.Add(-time.Hour), End: now.Add(time.Hour), Nodes: []string{"n2"}}}}
}

// runCmd runs gpuacct with the board commands and returns exit code,
// stdout and stderr. The ledger holds no note.
func runCmd(t *testing.T, slurmErr error, args ...string) (int, string, string) {
	t.Helper()
	return runNotes(t, slurmErr, nil, args...)
}

// runNotes is runCmd with the notes read by notes (nil: none).
func runNotes(t *testing.T, slurmErr error, notes func(context.Context, string, time.Duration, time.Time) ([]board.Note, error), args ...string) (int, string, string) {
	t.Helper()
	slurm := func() (slurmstate.State, error) {
		if slurmErr != nil {
			return slurmstate.State{}, slurmErr
		}
		return slurmFixture(), nil
	}
	return runAt(t, now, slurm, notes, args...)
}

// runAt is runNotes at the time at with Slurm's view read by slurm.
func runAt(t *testing.T, at time.Time, slurm func() (slurmstate.State, error), notes func(context.Context, string, time.Duration, time.Time) ([]board.Note, error), args ...string) (int, string, string) {
	t.Helper()
	if notes == nil {
		notes = func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return nil, nil }
	}
	// The cluster the agents stamp on the fixture's snapshots; nothing of
	// the environment.
	return runApp(t, at, "[cluster]\nname = \"c1\"\n", func(string) string { return "" },
		func(context.Context, time.Duration) (slurmstate.State, error) { return slurm() }, notes, args...)
}

// runApp runs gpuacct with the free and status commands at at, as the
// process would, with the config file conf; env answers for the rest of
// the environment.
func runApp(t *testing.T, at time.Time, conf string, env func(string) string, slurm func(context.Context, time.Duration) (slurmstate.State, error),
	notes func(context.Context, string, time.Duration, time.Time) ([]board.Note, error), args ...string) (int, string, string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	d := Deps{Stdout: &out, Stderr: &errb, Now: func() time.Time { return at }, Loc: time.UTC,
		Getenv: func(k string) string {
			if k == "GPUSUITE_CONFIG" {
				return cfg
			}
			return env(k)
		},
		Slurm: slurm, Notes: notes}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()},
		Commands: []*cli.Command{FreeCommand(d), StatusCommand(d)}}
	cliwire.Prepare(app)
	err := app.Run(append([]string{"gpuacct"}, args...))
	code := cliwire.Finish("gpuacct", &errb, err)
	return code, out.String(), errb.String()
}

func TestGolden(t *testing.T) {
	unreachable := errors.New("read slurm nodes: scontrol show node --oneliner: slurm_load_node error: Unable to contact slurm controller (connect failure): exit status 1")
	// a booked GPU (n1 GPU 1), a node-wide note (n2, reserved: booked
	// wins), a note with markup longer than a cell
	one := 1
	noted := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) {
		return []board.Note{
			{ID: 4, Node: "n1", GPU: &one, Until: now.Add(30 * time.Hour), Text: "booked for the <b>NeurIPS</b> run, please ask before using it", Author: "carol"},
			{ID: 5, Node: "n2", Until: now.Add(2 * time.Hour), Text: "fan noisy\tafter the swap", Author: "root"},
		}, nil
	}
	// c2's notes in a ledger shared with c1: on c2's n4 (c1's n4 has no
	// snapshot) and on a node only c2 has: neither is c1's board's.
	otherCluster := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) {
		return []board.Note{
			{ID: 6, Cluster: "c2", Node: "n4", Until: now.Add(time.Hour), Text: "c2's n4", Author: "dave"},
			{ID: 7, Cluster: "c2", Node: "x9", Until: now.Add(time.Hour), Text: "c2's x9", Author: "dave"},
		}, nil
	}
	unreadable := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) {
		return nil, errors.New(`open store "/data/gpusuite/gpuacct.db": no such file`)
	}
	type notesFunc = func(context.Context, string, time.Duration, time.Time) ([]board.Note, error)
	tests := []struct {
		name     string
		slurmErr error
		args     []string
		// foreign adds n6.json holding n1's snapshot: skipped, and said.
		foreign bool
		notes   notesFunc
	}{
		{"free", nil, []string{"free"}, false, nil},
		{"free_json", nil, []string{"free", "--format", "json"}, false, nil},
		{"free_slurm_unreachable", unreachable, []string{"free"}, false, nil},
		{"free_no_slurm", nil, []string{"free", "--no-slurm"}, false, nil},
		{"status", nil, []string{"status"}, false, nil},
		{"status_nodes", nil, []string{"status", "n5", "n1"}, false, nil},
		{"status_json", nil, []string{"status", "--format", "json", "n4"}, false, nil},
		{"status_slurm_unreachable", unreachable, []string{"status"}, false, nil},
		{"status_skipped_file", nil, []string{"status", "n1"}, true, nil},
		{"free_notes", nil, []string{"free"}, false, noted},
		{"free_notes_json", nil, []string{"free", "--format", "json"}, false, noted},
		{"status_notes", nil, []string{"status", "n1", "n2"}, false, noted},
		{"status_notes_json", nil, []string{"status", "--format", "json", "n1", "n2"}, false, noted},
		{"status_notes_unreadable", nil, []string{"status", "n1"}, false, unreadable},
		{"status_other_cluster_notes", nil, []string{"status", "--format", "json", "n4"}, false, otherCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixture(t)
			if tt.foreign {
				data, err := os.ReadFile(filepath.Join(dir, "n1.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "n6.json"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Flags go before the node names: urfave/cli stops at the first argument.
			args := append([]string{tt.args[0], "--live-dir", dir}, tt.args[1:]...)
			code, out, errs := runNotes(t, tt.slurmErr, tt.notes, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			cmdline.Golden(t, filepath.Join("testdata", tt.name+".golden"), out, *update)
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := fixture(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"unknown node", []string{"status", "--live-dir", dir, "n1", "n9"}, 2, `gpuacct: status: node "n9" is not on the board`},
		{"bad format", []string{"free", "--live-dir", dir, "--format", "xml"}, 2, `gpuacct: free: --format "xml" is not table or json`},
		{"argument to free", []string{"free", "--live-dir", dir, "n1"}, 2, `unexpected argument "n1"`},
		{"bad timeout", []string{"free", "--live-dir", dir, "--slurm-timeout", "1h"}, 2, "--slurm-timeout 1h0m0s is outside"},
		{"nothing to show", []string{"free", "--no-slurm", "--live-dir", filepath.Join(dir, "absent")}, 1, "free: nothing to show: open live directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCmd(t, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, errs)
			}
			if !strings.Contains(errs, tt.wantErr) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", errs, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q on bad input", out)
			}
		})
	}
}

// TestLedgerNotes: status reads the notes in force from a real ledger,
// read-only; a ledger that cannot be read is one warning, the board
// still shown.
func TestLedgerNotes(t *testing.T) {
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Begin(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	for i, n := range []store.Note{
		{Cluster: "c1", Node: "n1", GPU: &one, Until: now.Add(time.Hour), Text: "mine until lunch", Author: "carol", UID: 1001, Created: now.Add(-time.Hour)},
		{Cluster: "c1", Node: "n1", Until: now.Add(-time.Minute), Text: "expired", Author: "carol", UID: 1001, Created: now.Add(-time.Hour)},
	} {
		if _, err := b.AddNote(n, fmt.Sprintf("req-%d", i)); err != nil {
			b.Rollback()
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	dir := fixture(t)
	dbOpt := "--db=" + l.Path
	if l.URL != "" {
		dbOpt = "--store-url=" + l.URL
	}
	code, out, errs := runNotes(t, nil, LedgerNotes, "status", "--live-dir", dir, dbOpt, "n1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "BOOKED") || !strings.Contains(out, "#1 mine until lunch (carol)") || strings.Contains(out, "expired") || strings.Contains(out, "WARNING") {
		t.Errorf("status with a note in force and one expired:\n%s", out)
	}
	code, out, errs = runNotes(t, nil, LedgerNotes, "free", "--live-dir", dir, "--db", filepath.Join(dir, "absent.db"))
	if code != 0 {
		t.Fatalf("unreadable ledger: exit %d: %s", code, errs)
	}
	if first := strings.SplitN(out, "\n", 2)[0]; !strings.HasPrefix(first, "WARNING: notes not read (") || !strings.Contains(out, "Free GPUs at") {
		t.Errorf("unreadable ledger:\n%s", out)
	}
}
