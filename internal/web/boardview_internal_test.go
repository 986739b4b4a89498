package web

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// updating is the -update of the package's external tests (board_test.go):
// one test binary holds both, so a flag of its own would clash.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// viewNow is the fixed clock of the board's renderings.
var viewNow = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// viewSnapshot is a board with one of each thing a rendering shows:
// every state, two models and partitions, a node in two partitions, a
// restarted job, a job of no account, a process of no job, notes on a
// node and a GPU, a note on no node, a drain reason with markup and a
// CR, a node not responding, one Slurm does not list, stale nodes with
// and without a snapshot, free GPUs in two partitions, and more skipped files than the page lists.
func viewSnapshot() *board.Snapshot {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	gpu := func(i int, model string, util uint32, used uint64, jobs ...record.LiveJob) record.LiveGPU {
		return record.LiveGPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", model, i), Model: model, Util: u32(util),
			MemUsedMiB: u64(used), MemTotalMiB: u64(81920), PowerMW: u32(312_500), TempC: u32(61), Jobs: jobs}
	}
	job := func(id uint64, restart int, user, account string, age time.Duration) record.LiveJob {
		return record.LiveJob{Job: id, Restart: restart, User: user, Account: account, Start: viewNow.Add(-age)}
	}
	fresh := viewNow.Add(-4 * time.Second)
	idle := viewNow.Add(-25 * time.Minute)
	n1 := record.Live{Node: "n1", Time: fresh, GPUs: []record.LiveGPU{
		gpu(0, "NVIDIA H100", 87, 40960, job(7, 0, "alice", "physics", 90*time.Minute)),
		gpu(1, "NVIDIA H100", 0, 512, job(8, 2, "bob", "vision", 76*time.Hour+5*time.Minute)),
		gpu(2, "NVIDIA H100", 30, 2048, job(9, 0, "carol", "physics", 40*time.Second)),
		gpu(3, "NVIDIA H100", 0, 0),
	}}
	n1.GPUs[1].IdleSince = &idle
	n1.GPUs[0].Procs = []record.LiveProc{{PID: 1007, User: "alice", Job: 7, MemUsedMiB: 40900}}
	n1.GPUs[2].Procs = []record.LiveProc{{PID: 1009, User: "carol", Job: 9, MemUsedMiB: 1024},
		{PID: 4242, User: "mallory", Job: 99, MemUsedMiB: 1024}, {PID: 77, User: "", Job: 0, MemUsedMiB: 12}}
	n2 := record.Live{Node: "n2", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA A100", 0, 0), gpu(1, "NVIDIA A100", 0, 0),
		gpu(2, "NVIDIA H100", 0, 0)}}
	n2.GPUs[2].MemTotalMiB = nil
	n2.GPUs[2].Util, n2.GPUs[2].PowerMW, n2.GPUs[2].TempC = nil, nil, nil
	n3 := record.Live{Node: "n3", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0)}}
	n4 := record.Live{Node: "n4", Time: viewNow.Add(-10 * time.Minute), GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0)}}
	n6 := record.Live{Node: "n6", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 12, 900, job(11, 0, "", "", time.Hour))}}
	n6.GPUs[0].Procs = []record.LiveProc{{PID: 5, User: "dave", Job: 0, MemUsedMiB: 900, Foreign: true}}
	n7 := record.Live{Node: "n7", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0)}}
	n8 := record.Live{Node: "n8", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0)}}
	n10 := record.Live{Node: "n10", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0), gpu(1, "NVIDIA H100", 0, 0)}}
	var lives []record.Live
	for _, l := range []record.Live{n1, n2, n3, n4, n6, n7, n8, n10} {
		l.Schema, l.Cluster, l.Interval = record.LiveSchema, "c1", 10
		lives = append(lives, l)
	}
	node := func(name string, cond slurmstate.Condition, n int, parts ...string) slurmstate.Node {
		return slurmstate.Node{Name: name, Condition: cond, Partitions: parts, GPUs: []slurmstate.GPU{{Type: "h100", Count: n}}, GPUCount: n}
	}
	n3s := node("n3", slurmstate.Drained, 1, "gpu")
	n3s.Reason = "bad fan <check>\rnow"
	n7s := node("n7", slurmstate.Idle, 1, "gpu")
	n7s.NotResponding = true
	st := slurmstate.State{At: viewNow.Add(-12 * time.Second), Nodes: []slurmstate.Node{
		node("n1", slurmstate.Mixed, 4, "gpu", "long"), node("n2", slurmstate.Idle, 3, "a100", "gpu"), n3s,
		node("n4", slurmstate.Idle, 1, "gpu"), node("n5", slurmstate.Down, 2, "gpu"), node("n6", slurmstate.Mixed, 1, "gpu"), n7s,
		node("n10", slurmstate.Idle, 2, "gpu", "long")},
		Reservations: []slurmstate.Reservation{{Name: "maint", Nodes: []string{"n2"}}}}
	one, nine := 1, 9
	notes := []board.Note{
		{ID: 3, Node: "n2", GPU: &one, Until: viewNow.Add(2 * time.Hour), Text: "<b>demo</b> & friends", Author: "ann"},
		{ID: 4, Node: "n1", Until: viewNow.Add(26 * time.Hour), Text: "firmware update friday", Author: "ops"},
		{ID: 5, Node: "n1", GPU: &nine, Until: viewNow.Add(time.Hour), Text: "no such GPU", Author: "ann"},
		{ID: 6, Node: "gone", Until: viewNow.Add(time.Hour), Text: "no such node", Author: "ann"},
	}
	s := &board.Snapshot{Board: board.BuildCluster("c1", lives, &st, notes, viewNow), SlurmAsked: true}
	for i := range 12 {
		s.Meta.Problems = append(s.Meta.Problems, board.Problem{File: fmt.Sprintf("bad%02d.json", i), Err: "not a live snapshot"})
	}
	s.Meta.Problems = append(s.Meta.Problems, s.Board.NoteProblems...)
	return s
}

// quietSnapshot is a board with no fresh agent, Slurm unreachable and
// the notes unreadable.
func quietSnapshot() *board.Snapshot {
	l := record.Live{Schema: record.LiveSchema, Node: "n9", Cluster: "c1", Interval: 10, Time: viewNow.Add(-time.Hour),
		GPUs: []record.LiveGPU{{Index: 0, Model: "NVIDIA L4"}}}
	return &board.Snapshot{Board: board.Build([]record.Live{l}, nil, nil, viewNow), SlurmAsked: true,
		Meta: board.Meta{SlurmError: "scontrol: Unable to contact slurm controller"}, NotesError: "open ledger: no such file"}
}

// TestBoardRenderings holds every byte of the board's three renderings
// of one board in web (the page's fragment, its event sections, the API
// documents), with names and without.
func TestBoardRenderings(t *testing.T) {
	h, err := New(Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC, Now: func() time.Time { return viewNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	for _, tc := range []struct {
		name string
		snap *board.Snapshot
		h    *Handler
	}{
		{"full", viewSnapshot(), h},
		{"full-anonymous", viewSnapshot(), h.anonymous()},
		{"quiet", quietSnapshot(), h},
		{"notslurm", &board.Snapshot{Board: board.Build(nil, nil, nil, viewNow)}, h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frag, err := tc.h.renderFrag(tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			viewGolden(t, tc.name+"-frag.html", frag)
			secs, err := tc.h.renderSections(tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, s := range secs {
				fmt.Fprintf(&b, "== %s\n%s\n", s.id, s.html)
			}
			viewGolden(t, tc.name+"-sections.html", b.Bytes())
			doc := tc.h.view(tc.snap).Status(tc.snap.Board.Nodes)
			tc.h.v.maskStatus(&doc)
			viewGolden(t, tc.name+"-status.json", indent(t, doc))
			viewGolden(t, tc.name+"-free.json", indent(t, tc.h.view(tc.snap).Free()))
			viewGolden(t, tc.name+"-key.json", changeKey(tc.snap))
		})
	}
}

func indent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func viewGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "view", name+".golden")
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/web/ -run TestBoardRenderings -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
