package requests

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestQueueAppliesItsKinds: a queue applies the kinds its wiring gives
// it, in order, and no other: a kind is a value (a name, a check, an
// apply), not something the package knows of itself.
func TestQueueAppliesItsKinds(t *testing.T) {
	e := newQueueEnv(t)
	ctx := context.Background()
	noteID := e.submit(t, add("gpu01", nil, e.now.Add(time.Hour), "waits for the note kind"), 1000)

	var order []string
	echo := func(name string) Kind {
		dir := filepath.Join(e.dir, name)
		for _, d := range []string{pendingDir(dir), appliedDir(dir)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		data, err := json.Marshal(Request{Schema: "test/" + name, Action: name, Reason: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pendingDir(dir), "1.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return Kind{
			Name: name, Dir: dir, Keep: time.Hour,
			Check: func(r *Request, _ int, _ fs.FileMode) error { return nil },
			Apply: func(_ context.Context, r *Request, _ int, key string) error {
				order = append(order, key)
				r.Changed = []string{r.Action}
				return nil
			},
			Key:     func(name string, _ int) string { return "test/" + name },
			Outcome: func(name string, _ int) string { return name },
			Then: func(context.Context) error {
				order = append(order, "then "+name)
				return nil
			},
		}
	}
	a, b := echo("a"), echo("b")
	b.Key = func(name string, _ int) string { return "other/" + name }
	n, err := New(e.dir, e.now, nil, a, b).Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("applied %d requests, want 2", n)
	}
	if d := cmp.Diff([]string{"test/1.json", "then a", "other/1.json", "then b"}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	for _, k := range []string{"a", "b"} {
		r, _, _, err := readRequest(filepath.Join(appliedDir(filepath.Join(e.dir, k)), "1.json"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{k}, r.Changed); d != "" || r.AppliedAt == nil {
			t.Errorf("kind %s outcome %+v (-want +got changed):\n%s", k, r, d)
		}
	}
	// The note kind was not given: its request waits.
	if _, err := os.Stat(filepath.Join(pendingDir(NotesDir(e.dir)), noteID+".json")); err != nil {
		t.Errorf("note request without the note kind: %v", err)
	}
	// The writer's wiring gives it.
	e.apply(t)
	if got := e.outcome(t, noteID, 1000); got.Error != "" || got.Note == nil || got.Note.ID == 0 || !strings.Contains(got.Note.Text, "waits") {
		t.Errorf("note request with the writer's kinds: %+v", got)
	}
}

// TestOpenKindsNameByOwner: the note and notify queues are open to
// anyone, so their ledger keys and outcome names carry the file's owner
// (one user's file name never stands for another's request or outcome),
// and those keys are what ledgers already hold: they must not change.
func TestOpenKindsNameByOwner(t *testing.T) {
	trusted := func(uid int) bool { return uid == 0 }
	o := Options{Dir: "/req", Trusted: trusted}
	for _, tc := range []struct {
		kind                    Kind
		name, dir, key, outcome string
	}{
		{NoteKind(nil, o), "note", NotesDir("/req"), "request/note/u1000/n1.json", "n1.u1000.json"},
		{NotifyKind(nil, o), "notify", NotifyDir("/req"), "request/notify/u1000/n1.json", "n1.u1000.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.kind
			got := []string{k.Name, k.Dir, k.Key("n1.json", 1000), k.Outcome("n1.json", 1000)}
			if diff := cmp.Diff([]string{tc.name, tc.dir, tc.key, tc.outcome}, got); diff != "" {
				t.Errorf("name, dir, key, outcome (-want +got):\n%s", diff)
			}
			if !k.Open || !k.IDFromName || k.Keep != AppliedKeep || k.Trusted == nil || !k.Trusted(0) || k.Trusted(1000) {
				t.Errorf("open %v, ID from name %v, keep %v, trusted set %v: want an open queue of IDs from names, AppliedKeep, the options' trust",
					k.Open, k.IDFromName, k.Keep, k.Trusted != nil)
			}
		})
	}
}
