package boardcmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/demo"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// TestFreeAgreesOnTheDemo: the demo's own cluster (real agents on
// simulated GPUs, its synthetic Slurm with a drained node and a reserved
// one, its booking), frozen at one moment, is counted free alike by
// gpuacct free, gpuacct status, the API and the board page, and its
// drained, reserved and booked GPUs are not free. Without the demo's
// Slurm, free and status read the view the demo wrote for them
// (--slurm-file, as the README says) and count the board's free GPUs
// too, where --no-slurm counts the drained and reserved ones.
func TestFreeAgreesOnTheDemo(t *testing.T) {
	live, frozen := t.TempDir(), t.TempDir()
	// Beside the snapshots, not among them: the board reads every *.json there.
	slurmFile := filepath.Join(t.TempDir(), demo.SlurmFileName)
	l, err := demo.NewLive(demo.LiveOptions{Info: demo.Info{Cluster: "c1", Nodes: 4, GPUs: 4, Model: "h100", Seed: 1, NextJob: 5001},
		LiveDir: live, WorkDir: t.TempDir(), Interval: time.Second, SlurmFile: slurmFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- l.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the demo ended before it was ready: %v", err)
	case <-ctx.Done():
		t.Fatal("the demo was not ready within 3 minutes")
	}
	// One moment of the demo, which every reader then reads: its
	// Slurm's view (which the demo writes to slurmFile) and the snapshots.
	slurm, err := l.Slurm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	files, err := filepath.Glob(filepath.Join(live, "*.json"))
	if err != nil || len(files) != 4 {
		t.Fatalf("snapshots %v, %v: want 4", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(frozen, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the demo still running 2 minutes after its context ended")
	}

	// The demo books its first node's GPU 3 (internal/demo/notes.go).
	three := 3
	notes := []board.Note{{ID: 1, Cluster: "c1", Node: "gpu01", GPU: &three, Until: at.Add(time.Hour), Text: "booked", Author: "heidi"}}
	got, doc := freeCounts(t, at, frozen, slurm, notes)
	free := 0
	for _, n := range doc.Nodes {
		for _, g := range n.GPUs {
			if g.State == board.Free {
				free++
			}
		}
	}
	for reader, n := range got {
		if n != free {
			t.Errorf("%s counts %d free, the board's cells %d: %v", reader, n, free, got)
		}
	}
	if s := doc.Totals.States; s[board.Drained] != 2 || s[board.Reserved] == 0 || s[board.Booked] != 1 || doc.Totals.StaleNodes != 0 {
		t.Errorf("the demo's board: states %v, %d stale nodes; want 2 drained, some reserved, 1 booked, none stale", s, doc.Totals.StaleNodes)
	}

	// The README's commands on the demo: no Slurm to ask, its view in
	// the file (flags after the command's name or after everything).
	noSlurm := func() (slurmstate.State, error) {
		t.Error("Slurm asked, with --slurm-file given")
		return slurmstate.State{}, errors.New("no Slurm here")
	}
	readNotes := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return notes, nil }
	fromFile := map[string]int{}
	code, out, errs := runAt(t, at, noSlurm, readNotes, "free", "--live-dir", frozen, "--slurm-file", slurmFile)
	if m := freeLine.FindStringSubmatch(out); code != 0 || m == nil || strings.Contains(out, "WARNING") {
		t.Fatalf("gpuacct free --slurm-file: exit %d, want 0, a total line and no warning:\n%s%s", code, out, errs)
	} else {
		fromFile["gpuacct free --slurm-file"], _ = strconv.Atoi(m[1])
	}
	for _, r := range []struct {
		name string
		args []string
		get  func([]byte) (int, error)
	}{
		{"gpuacct free --format json --slurm-file", []string{"free", "--format", "json", "--live-dir", frozen, "--slurm-file", slurmFile},
			func(b []byte) (int, error) {
				var d board.FreeDoc
				err := json.Unmarshal(b, &d)
				return d.FreeTotal, err
			}},
		{"gpuacct status --format json --slurm-file", []string{"status", "--slurm-file", slurmFile, "--format", "json", "--live-dir", frozen},
			func(b []byte) (int, error) {
				var d board.StatusDoc
				err := json.Unmarshal(b, &d)
				return d.Totals.Free, err
			}},
	} {
		code, out, errs := runAt(t, at, noSlurm, readNotes, r.args...)
		n, err := r.get([]byte(out))
		if code != 0 || err != nil {
			t.Fatalf("%s: exit %d, %v:\n%s%s", r.name, code, err, out, errs)
		}
		fromFile[r.name] = n
	}
	want := map[string]int{}
	for k := range fromFile {
		want[k] = free
	}
	if d := cmp.Diff(want, fromFile); d != "" {
		t.Errorf("free GPUs read with the demo's Slurm view from its file, against the board's %d (-want +got):\n%s", free, d)
	}
	code, out, errs = runAt(t, at, noSlurm, readNotes, "free", "--live-dir", frozen, "--no-slurm")
	if m := freeLine.FindStringSubmatch(out); code != 0 || m == nil {
		t.Fatalf("gpuacct free --no-slurm: exit %d:\n%s%s", code, out, errs)
	} else if n, _ := strconv.Atoi(m[1]); n <= free {
		t.Errorf("gpuacct free --no-slurm counts %d free, the board %d: the drained and reserved GPUs should show only without Slurm's view", n, free)
	}
}
