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
