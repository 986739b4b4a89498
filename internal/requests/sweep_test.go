package requests

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// applyWith is a pass under lim, its log lines returned.
func (e *queueEnv) applyWith(t *testing.T, lim limits) string {
	t.Helper()
	var buf bytes.Buffer
	q := Writer(e.st, Options{Dir: e.dir, Now: e.now, Cluster: "c",
		Trusted:  func(uid int) bool { return uid == 0 || uid == 999 },
		UserName: func(uid int) (string, error) { return "user" + strconv.Itoa(uid), nil },
		Log:      slog.New(slog.NewTextHandler(&buf, nil))})
	q.lim = lim
	_, err := q.Apply(context.Background())
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
// first; each owner apart, the owner being the one the outcome records,
// never its name.
func TestApplyPrunesOutcomesPerOwner(t *testing.T) {
	e := newQueueEnv(t)
	applied := appliedDir(NotesDir(e.dir))
	lim := defaultLimits()
	lim.outcomesPerOwner = 2
	files := map[string]struct {
		uid int
		age time.Duration
	}{
		"a.u1000.json": {1000, 3 * time.Hour}, "b.u1000.json": {1000, 2 * time.Hour}, "c.u1000.json": {1000, time.Hour},
		"d.u1001.json": {1001, 5 * time.Hour}, "e.u1001.json": {1001, 4 * time.Hour},
		// Named like uid 1001's, recorded as 1002's: it does not count
		// against 1001.
		"f.u1001.json":   {1002, time.Minute},
		"old.u1002.json": {1002, AppliedKeep + time.Hour},
	}
	for name, f := range files {
		p := filepath.Join(applied, name)
		if err := os.WriteFile(p, []byte(`{"uid":`+strconv.Itoa(f.uid)+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
		at := e.now.Add(-f.age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	log := e.applyWith(t, lim)
	want := []string{"b.u1000.json", "c.u1000.json", "d.u1001.json", "e.u1001.json", "f.u1001.json"}
	if diff := cmp.Diff(want, dirNames(t, applied)); diff != "" {
		t.Errorf("outcomes kept (-want +got):\n%s", diff)
	}
	if !strings.Contains(log, "request outcomes past the most kept per user pruned") || !strings.Contains(log, "old request outcomes pruned") {
		t.Errorf("log:\n%s", log)
	}
}

// A symbolic link in pending/ named like alice's applied outcome made
// the writer write "refused: a symbolic link" over it (the link's owner
// was unknown, and the outcome kept the name's uid); 1,000 such links
// pushed her real outcomes out of applied/. Anything not a regular file
// is swept without an outcome, under any name.
func TestApplyLinksTouchNoOutcome(t *testing.T) {
	e := newQueueEnv(t)
	pending, applied := pendingDir(NotesDir(e.dir)), appliedDir(NotesDir(e.dir))
	lim := defaultLimits()
	lim.outcomesPerOwner = 3
	var alice []string
	for i := range 3 {
		e.now = e.now.Add(time.Second)
		alice = append(alice, e.submit(t, add("gpu01", nil, e.now.Add(time.Hour), "alice's "+strconv.Itoa(i)), 1001))
	}
	e.applyWith(t, lim)
	before := map[string]Request{}
	for _, id := range alice {
		before[id] = e.outcome(t, id, 1001)
	}
	// mallory (uid 1002) leaves a link named like each of alice's
	// outcomes, then 1,000 more, a FIFO and a directory so named.
	mallory := func(path string) {
		if err := os.Lchown(path, 1002, 1002); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range alice {
		p := filepath.Join(pending, id+".u1001.json")
		if err := os.Symlink("/etc/passwd", p); err != nil {
			t.Fatal(err)
		}
		mallory(p)
	}
	for i := range 1000 {
		p := filepath.Join(pending, "zz"+strconv.Itoa(i)+".u1001.json")
		if err := os.Symlink("/nonexistent", p); err != nil {
			t.Fatal(err)
		}
		mallory(p)
	}
	fifo := filepath.Join(pending, alice[0]+"x.u1001.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	mallory(fifo)
	e.now = e.now.Add(time.Minute)
	for range 2 { // two passes: the 1,000 links take more than one owner's share of one
		e.applyWith(t, lim)
	}
	for _, id := range alice {
		if diff := cmp.Diff(before[id], e.outcome(t, id, 1001)); diff != "" {
			t.Errorf("alice's outcome %s changed (-before +after):\n%s", id, diff)
		}
	}
	if got := dirNames(t, applied); len(got) != len(alice) {
		t.Errorf("applied/ holds %d outcomes, want alice's %d alone: %v", len(got), len(alice), got[:min(5, len(got))])
	}
	if got := dirNames(t, pending); len(got) != 0 {
		t.Errorf("left pending: %d entries, e.g. %v", len(got), got[:min(5, len(got))])
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
