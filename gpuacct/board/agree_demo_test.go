package board

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	liveboard "github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/demo"
)

// TestFreeAgreesOnTheDemo: the demo's own cluster (real agents on
// simulated GPUs, its synthetic Slurm with a drained node and a reserved
// one, its booking), frozen at one moment, is counted free alike by
// gpuacct free, gpuacct status, the API and the board page, and its
// drained, reserved and booked GPUs are not free.
func TestFreeAgreesOnTheDemo(t *testing.T) {
	live, frozen := t.TempDir(), t.TempDir()
	l, err := demo.NewLive(demo.LiveOptions{Info: demo.Info{Cluster: "c1", Nodes: 4, GPUs: 4, Model: "h100", Seed: 1, NextJob: 5001},
		LiveDir: live, WorkDir: t.TempDir(), Interval: time.Second})
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
	// Slurm's view and the snapshots.
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
	notes := []liveboard.Note{{ID: 1, Cluster: "c1", Node: "gpu01", GPU: &three, Until: at.Add(time.Hour), Text: "booked", Author: "heidi"}}
	got, doc := freeCounts(t, at, frozen, slurm, notes)
	free := 0
	for _, n := range doc.Nodes {
		for _, g := range n.GPUs {
			if g.State == liveboard.Free {
				free++
			}
		}
	}
	for reader, n := range got {
		if n != free {
			t.Errorf("%s counts %d free, the board's cells %d: %v", reader, n, free, got)
		}
	}
	if s := doc.Totals.States; s[liveboard.Drained] != 2 || s[liveboard.Reserved] == 0 || s[liveboard.Booked] != 1 || doc.Totals.StaleNodes != 0 {
		t.Errorf("the demo's board: states %v, %d stale nodes; want 2 drained, some reserved, 1 booked, none stale", s, doc.Totals.StaleNodes)
	}
}
