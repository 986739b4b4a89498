package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func gpuPtr(i int) *int { return &i }

// addNotes keeps ns in one batch at now and returns their ids.
func addNotes(t *testing.T, s *Ledger, now time.Time, ns ...Note) []int64 {
	t.Helper()
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, n := range ns {
		id, err := b.AddNote(n, "req-"+string(rune('a'+i))+n.Node)
		if err != nil {
			b.Rollback()
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestNotes(t *testing.T) {
	ctx := context.Background()
	s, l := openLedger(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	note := func(node string, gpu *int, until time.Duration, text string) Note {
		return Note{Cluster: "c", Node: node, GPU: gpu, Until: t0.Add(until), Text: text, Author: "alice", UID: 1000, Created: t0}
	}
	ids := addNotes(t, s, t0,
		note("gpu02", gpuPtr(3), 48*time.Hour, "booked for the NeurIPS run"),
		note("gpu01", nil, 2*time.Hour, "fan noisy, <b>do not use</b>"),
		note("gpu02", nil, time.Hour, "expires first"),
		note("gpu01", gpuPtr(0), 24*time.Hour, "to remove"),
	)
	b, err := s.Begin(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.RemoveNote(ids[3], "bob", t0.Add(time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	removedAt := t0.Add(time.Minute)

	nodes := func(ns []Note) []int64 {
		var out []int64
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		now  time.Time
		all  bool
		want []int64
	}{
		{"active by node then gpu", t0.Add(30 * time.Minute), false, []int64{ids[1], ids[2], ids[0]}},
		{"until is exclusive", t0.Add(time.Hour), false, []int64{ids[1], ids[0]}},
		{"none before created", t0.Add(-time.Second), false, nil},
		{"all newest first", t0.Add(100 * time.Hour), true, []int64{ids[3], ids[2], ids[1], ids[0]}},
		{"none left", t0.Add(100 * time.Hour), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Notes(ctx, tc.now, tc.all)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, nodes(got)); diff != "" {
				t.Errorf("note ids (-want +got):\n%s", diff)
			}
		})
	}

	// A read-only store serves the same notes, every field as kept.
	r, err := Open(ctx, Options{Path: l.Path, URL: l.URL, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	all, err := r.Notes(ctx, t0, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Note{
		{ID: ids[3], Cluster: "c", Node: "gpu01", GPU: gpuPtr(0), Until: t0.Add(24 * time.Hour), Text: "to remove", Author: "alice", UID: 1000, Created: t0, RemovedAt: &removedAt, RemovedBy: "bob"},
		{ID: ids[2], Cluster: "c", Node: "gpu02", Until: t0.Add(time.Hour), Text: "expires first", Author: "alice", UID: 1000, Created: t0},
		{ID: ids[1], Cluster: "c", Node: "gpu01", Until: t0.Add(2 * time.Hour), Text: "fan noisy, <b>do not use</b>", Author: "alice", UID: 1000, Created: t0},
		{ID: ids[0], Cluster: "c", Node: "gpu02", GPU: gpuPtr(3), Until: t0.Add(48 * time.Hour), Text: "booked for the NeurIPS run", Author: "alice", UID: 1000, Created: t0},
	}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("read-only Notes (-want +got):\n%s", diff)
	}
	one, err := r.Note(ctx, ids[1])
	if err != nil || one.Text != want[2].Text {
		t.Errorf("Note(%d) = %+v, %v", ids[1], one, err)
	}
	if _, err := r.Note(ctx, 999); !errors.Is(err, ErrNoNote) {
		t.Errorf("Note(999) error %v, want ErrNoNote", err)
	}
}

// The same request applied twice (a crash between commit and moving its
// file) keeps one note.
func TestAddNoteOncePerRequest(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	n := Note{Node: "gpu01", Until: t0.Add(time.Hour), Text: "x", UID: 1, Created: t0}
	a := addNotes(t, s, t0, n)
	b := addNotes(t, s, t0, n)
	if a[0] != b[0] {
		t.Errorf("second apply of one request added note %d beside %d", b[0], a[0])
	}
	all, err := s.Notes(context.Background(), t0, true)
	if err != nil || len(all) != 1 {
		t.Errorf("%d notes kept (%v), want 1", len(all), err)
	}
}

func TestRemoveNoteRefusals(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	ids := addNotes(t, s, t0, Note{Node: "gpu01", Until: t0.Add(time.Hour), Text: "mine", Author: "alice", UID: 1000, Created: t0})
	notAuthor := errors.New("not the author")
	for _, tc := range []struct {
		name    string
		id      int64
		allowed func(Note) error
		want    error
	}{
		{"unknown id", 42, nil, ErrNoNote},
		{"refused", ids[0], func(n Note) error {
			if n.UID != 1001 {
				return notAuthor
			}
			return nil
		}, notAuthor},
		{"removed", ids[0], nil, nil},
		{"removed again", ids[0], nil, ErrNoteRemoved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.Begin(context.Background(), t0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.RemoveNote(tc.id, "bob", t0, tc.allowed)
			if cerr := b.Commit(); cerr != nil {
				t.Fatal(cerr)
			}
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("RemoveNote: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNodeGPUs(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	b, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.Node("c", "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	for i, uuid := range []string{"GPU-a", "GPU-b"} {
		if _, err := b.GPU(uuid, n, gpuPtr(i), nil, "H100"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Node("c", "cpu01"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	type res struct {
		GPUs  int
		Known bool
	}
	for _, tc := range []struct {
		cluster, node string
		want          res
	}{
		{"c", "gpu01", res{2, true}},
		{"", "gpu01", res{2, true}},
		{"c", "cpu01", res{0, true}},
		{"other", "gpu01", res{0, false}},
		{"c", "nodeX", res{0, false}},
	} {
		t.Run(strings.Join([]string{tc.cluster, tc.node}, "/"), func(t *testing.T) {
			g, k, err := s.NodeGPUs(ctx, tc.cluster, tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res{g, k}); diff != "" {
				t.Errorf("NodeGPUs (-want +got):\n%s", diff)
			}
		})
	}
}

// Past MaxNotes a read says so: the rows it returns are not taken for
// every note.
func TestNotesTooMany(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	b, err := s.Begin(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxNotes+1; i++ {
		if _, err := b.AddNote(Note{Node: "gpu01", Until: t0.Add(time.Hour), Text: "x", UID: 1, Created: t0}, ""); err != nil {
			b.Rollback()
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		got, err := s.Notes(ctx, t0, all)
		if !errors.Is(err, ErrTooManyNotes) || len(got) != MaxNotes {
			t.Errorf("Notes(all=%t) = %d rows, %v; want %d and ErrTooManyNotes", all, len(got), err, MaxNotes)
		}
	}
}

func TestActiveNotes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	n := func(uid int, until time.Duration) Note {
		return Note{Node: "gpu01", Until: t0.Add(until), Text: "x", UID: uid, Created: t0}
	}
	ids := addNotes(t, s, t0, n(1000, time.Hour), n(1000, 2*time.Hour), n(1000, 3*time.Hour), n(1001, time.Hour))
	b, err := s.Begin(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if _, err := b.RemoveNote(ids[2], "x", t0, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uid  int
		at   time.Duration
		want int
	}{
		{1000, 0, 2}, {1000, time.Hour, 1}, {1001, 0, 1}, {1001, time.Hour, 0}, {1002, 0, 0},
	} {
		if got, err := b.ActiveNotes(tc.uid, t0.Add(tc.at)); err != nil || got != tc.want {
			t.Errorf("ActiveNotes(%d, +%v) = %d, %v; want %d", tc.uid, tc.at, got, err, tc.want)
		}
	}
}
