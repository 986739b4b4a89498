package ignorereq

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// applyWith is a pass under lim, its log lines returned.
func (e *queueEnv) applyWith(t *testing.T, lim limits) string {
	t.Helper()
	var buf bytes.Buffer
	_, err := apply(context.Background(), e.st, Options{Dir: e.dir, Now: e.now, Cluster: "c",
		Trusted:  func(uid int) bool { return uid == 0 || uid == 999 },
		UserName: func(uid int) (string, error) { return "user" + strconv.Itoa(uid), nil },
		Log:      slog.New(slog.NewTextHandler(&buf, nil))}, lim)
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// small are bounds a test reaches with a few files.
func small() limits {
	l := defaultLimits()
	l.looked, l.listed, l.read = 4, 4, 100
	return l
}

// outcomes counts the outcomes of owner in applied/.
func (e *queueEnv) outcomes(t *testing.T, owner int) int {
	t.Helper()
	n := 0
	for _, name := range dirNames(t, appliedDir(NotesDir(e.dir))) {
		if strings.HasSuffix(name, ".u"+strconv.Itoa(owner)+".json") {
			n++
		}
	}
	return n
}

// Entries the writer may not remove (a user's directory with files in
// it) took the requests' share of a pass: behind enough of them, no
// request was ever seen. They count against the read bound alone.
func TestApplyStuckTakesNoShare(t *testing.T) {
	e := newQueueEnv(t)
	pending := pendingDir(NotesDir(e.dir))
	for i := range 10 {
		if err := os.MkdirAll(filepath.Join(pending, "d"+strconv.Itoa(i), "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		e.submit(t, add("gpu01", nil, e.now.Add(time.Hour), "n"+strconv.Itoa(i)), 1000)
	}
	e.applyWith(t, small())
	if got := e.outcomes(t, 1000); got != 3 {
		t.Errorf("%d of 3 requests applied behind 10 directories the writer may not remove (4 entries looked at a pass)", got)
	}
	// The read bound still ends a pass: with room for 5 entries, a pass
	// names at most 5 of 10 new ones.
	for i := range 10 {
		if err := os.MkdirAll(filepath.Join(pending, "e"+strconv.Itoa(i), "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lim := small()
	lim.read = 5
	log := e.applyWith(t, lim)
	if n := strings.Count(log, "may not remove it"); n > 5 {
		t.Errorf("a pass that may read 5 entries named %d:\n%s", n, log)
	}
}

// One owner's requests take at most its share of a pass; the next wait,
// and those past the most one may queue are removed without an outcome.
// Root and the service user have no share.
func TestApplyOwnerShare(t *testing.T) {
	e := newQueueEnv(t)
	until := e.now.Add(time.Hour)
	lim := defaultLimits()
	lim.perOwner, lim.queuedPerOwner = 3, 5
	for i := range 7 {
		e.submit(t, add("gpu01", nil, until, "flood "+strconv.Itoa(i)), 1000)
	}
	e.submit(t, add("gpu02", nil, until, "mine"), 1001)
	for i := range 4 {
		e.submit(t, add("gpu02", nil, until, "root's "+strconv.Itoa(i)), 0)
		e.submit(t, add("gpu02", nil, until, "service's "+strconv.Itoa(i)), 999)
	}
	log := e.applyWith(t, lim)
	got := map[int]int{}
	for _, uid := range []int{0, 999, 1000, 1001} {
		got[uid] = e.outcomes(t, uid)
	}
	if diff := cmp.Diff(map[int]int{0: 4, 999: 4, 1000: 3, 1001: 1}, got); diff != "" {
		t.Errorf("outcomes after one pass by owner (-want +got):\n%s", diff)
	}
	if left := len(dirNames(t, pendingDir(NotesDir(e.dir)))); left != 2 {
		t.Errorf("%d requests left pending, want uid 1000's 2 past its share", left)
	}
	if !strings.Contains(log, `msg="note requests past the most one user may queue removed, no outcome kept" uid=1000 removed=2 most=5`) {
		t.Errorf("no log line for the requests dropped:\n%s", log)
	}
	e.applyWith(t, lim)
	if got := e.outcomes(t, 1000); got != 5 {
		t.Errorf("uid 1000 has %d outcomes after two passes, want 5", got)
	}
}

// Outcomes are pruned by age and, past the most kept per owner, oldest
// first; each owner apart.
func TestApplyPrunesOutcomesPerOwner(t *testing.T) {
	e := newQueueEnv(t)
	applied := appliedDir(NotesDir(e.dir))
	lim := defaultLimits()
	lim.outcomesPerOwner = 2
	files := map[string]time.Duration{
		"a.u1000.json": 3 * time.Hour, "b.u1000.json": 2 * time.Hour, "c.u1000.json": time.Hour,
		"d.u1001.json": 5 * time.Hour, "e.u1001.json": 4 * time.Hour,
		"old.u1002.json": AppliedKeep + time.Hour, "link.json": time.Hour,
	}
	for name, age := range files {
		p := filepath.Join(applied, name)
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := e.now.Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	log := e.applyWith(t, lim)
	want := []string{"b.u1000.json", "c.u1000.json", "d.u1001.json", "e.u1001.json", "link.json"}
	if diff := cmp.Diff(want, dirNames(t, applied)); diff != "" {
		t.Errorf("outcomes kept (-want +got):\n%s", diff)
	}
	if !strings.Contains(log, "note request outcomes past the most kept per user pruned") || !strings.Contains(log, "old note request outcomes pruned") {
		t.Errorf("log:\n%s", log)
	}
}

func TestOutcomeOwner(t *testing.T) {
	for name, want := range map[string]int{"x.u1000.json": 1000, "link.json": -1, "a.ux.json": -1, "a.u-3.json": -1, "sha256-ab.u0.json": 0} {
		if got := outcomeOwner(name); got != want {
			t.Errorf("outcomeOwner(%q) = %d, want %d", name, got, want)
		}
	}
}

// Every note outcome is kept short, an applied one too, and an outcome
// written into a request file is not taken for its outcome.
func TestApplyOutcomeShort(t *testing.T) {
	e := newQueueEnv(t)
	id := e.submit(t, add("gpu01", nil, e.now.Add(time.Hour), "applied"), 1000)
	path := filepath.Join(pendingDir(NotesDir(e.dir)), id+".json")
	var r map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 4000 {
		many = append(many, strconv.Itoa(i))
	}
	r["error"], r["not_found"], r["changed"] = "refused: forged", many, many
	data, err = json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e.applyLogged(t)
	out := e.outcome(t, id, 1000)
	if out.Error != "" || out.Note.ID == 0 || out.NotFound != nil || out.Changed != nil {
		t.Errorf("outcome of a request carrying an outcome: %+v", out)
	}
	if fi, err := os.Stat(filepath.Join(appliedDir(NotesDir(e.dir)), outcomeName(id, 1000))); err != nil || fi.Size() > 4096 {
		t.Errorf("outcome of a %d-byte request: %v (%v), want under 4 KiB", len(data), fi.Size(), err)
	}
}
