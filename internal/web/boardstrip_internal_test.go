package web

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// stripSnapshot is a board of one node, m1: GPU 0 whole, with a strip
// of an hour in which job 42 (alice) ran for ten minutes, then a gap,
// then no job; GPU 1 cut into a 3g.40gb held by job 5 (bob, whose
// process is "train<x>.py") and two free 1g.10gb. The node was drained
// and resumed in the hour.
func stripSnapshot() *board.Snapshot {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	at := viewNow.Add(-4 * time.Second)
	mig := func(uuid, profile string, util uint32, jobs ...record.LiveJob) record.LiveGPU {
		return record.LiveGPU{Index: 1, UUID: uuid, Model: "NVIDIA A100-SXM4-80GB MIG " + profile, Util: u32(util),
			MemUsedMiB: u64(1024), MemTotalMiB: u64(9856), Jobs: jobs}
	}
	l := record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: "m1", Time: at, Interval: 10, GPUs: []record.LiveGPU{
		{Index: 0, UUID: "GPU-0", Model: "NVIDIA A100-SXM4-80GB", Util: u32(0), MemUsedMiB: u64(0), MemTotalMiB: u64(81920)},
		{Index: 1, UUID: "GPU-1", Model: "NVIDIA A100-SXM4-80GB", MemUsedMiB: u64(2048), MemTotalMiB: u64(81920)},
		mig("MIG-a", "3g.40gb", 70, record.LiveJob{Job: 5, User: "bob", Account: "vision"}),
		mig("MIG-b", "1g.10gb", 0), mig("MIG-c", "1g.10gb", 0),
	}}
	l.GPUs[2].Procs = []record.LiveProc{{PID: 55, User: "bob", Name: "train<x>.py", Job: 5, MemUsedMiB: 1024}}
	st := slurmstate.State{At: viewNow, Nodes: []slurmstate.Node{{Name: "m1", Condition: slurmstate.Mixed, Partitions: []string{"gpu"},
		GPUs: []slurmstate.GPU{{Type: "a100", Count: 4}}, GPUCount: 4, GPUsUsed: 1}}}
	b := board.BuildCluster("c1", []record.Live{l}, &st, nil, viewNow)
	s := &board.Strip{End: viewNow.Truncate(time.Minute)}
	for i := range 10 {
		s.Minutes[40+i] = board.Minute{Seen: true, UtilKnown: true, Util: uint8(10 * i), Job: 42, User: "alice"}
	}
	for i := 55; i < board.StripMinutes; i++ {
		s.Minutes[i] = board.Minute{Seen: true, UtilKnown: true}
	}
	n := &b.Nodes[0]
	n.GPUs[0].Strip = s
	n.GPUs[1].Slices[0].Strip = s
	n.Changes = []board.StateChange{{At: viewNow.Add(-30 * time.Minute), From: "mixed", To: "drained"},
		{At: viewNow.Add(-20 * time.Minute), From: "drained", To: "mixed"}}
	return &board.Snapshot{Board: b, SlurmAsked: true}
}

// TestBoardStripRenderings holds the bytes of a board with a last-hour
// strip, MIG slices and state changes, with names and without; without,
// no user's name and no command shows anywhere.
func TestBoardStripRenderings(t *testing.T) {
	h, err := New(Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC, Now: func() time.Time { return viewNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	for _, tc := range []struct {
		name string
		h    *Handler
	}{{"strip", h}, {"strip-anonymous", h.anonymous()}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := stripSnapshot()
			frag, err := tc.h.renderFrag(snap)
			if err != nil {
				t.Fatal(err)
			}
			viewGolden(t, tc.name+"-frag.html", frag)
			doc := tc.h.view(snap).StatusLastHour(snap.Board.Nodes)
			tc.h.v.maskStatus(&doc)
			js := indent(t, doc)
			viewGolden(t, tc.name+"-status.json", js)
			for _, want := range []string{"job 42", "3g.40gb", "Free MIG slices", "drained → mixed", `href="/book?node=m1&amp;gpu=1"`} {
				if !strings.Contains(string(frag), want) {
					t.Errorf("the fragment lacks %q", want)
				}
			}
			if tc.name != "strip-anonymous" {
				return
			}
			for _, secret := range []string{"alice", "bob", "train"} {
				if bytes.Contains(frag, []byte(secret)) || bytes.Contains(js, []byte(secret)) {
					t.Errorf("%q shows to an anonymous viewer", secret)
				}
			}
		})
	}
}

// TestBoardStripCompact: a big board's cell says its strip, a mark per
// ten minutes, and its slices in its title.
func TestBoardStripCompact(t *testing.T) {
	h, err := New(Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC, Now: func() time.Time { return viewNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	snap := stripSnapshot()
	f := h.frag(snap)
	n := f.compactNode("row-0-0", "NVIDIA A100-SXM4-80GB", &board.Row{Node: &snap.Board.Nodes[0],
		GPUs: []*board.GPU{&snap.Board.Nodes[0].GPUs[0], &snap.Board.Nodes[0].GPUs[1]}})
	got := string(n.Cells)
	// One mark per ten minutes: four gaps, the rising ten minutes' mean,
	// then five minutes unseen and five near zero.
	want := "last hour " + strings.Repeat("·", 4) + "▄▁\""
	for _, w := range []string{want, "3g.40gb busy · job 5 bob", "1g.10gb free"} {
		if !strings.Contains(got, w) {
			t.Errorf("the cells lack %q:\n%s", w, got)
		}
	}
	if n.Jobs != "5" || n.Users != "bob" {
		t.Errorf("the row's search data: jobs %q, users %q", n.Jobs, n.Users)
	}
}
