package requests

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// applyLogged is apply with the pass's log lines returned.
func (e *queueEnv) applyLogged(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	_, err := Apply(context.Background(), e.st, Options{Dir: e.dir, Now: e.now, Cluster: "c",
		Trusted:  func(uid int) bool { return uid == 0 || uid == 999 },
		UserName: func(uid int) (string, error) { return "user" + strconv.Itoa(uid), nil },
		Log:      slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A file whose name leaves no room for its outcome's name was refused
// with ENAMETOOLONG on every pass, sorted first and blocked every note
// after it.
func TestApplyLongNameDoesNotBlock(t *testing.T) {
	e := newQueueEnv(t)
	pending := pendingDir(NotesDir(e.dir))
	long := "0" + strings.Repeat("x", 244)
	path := filepath.Join(pending, long+".json")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	after := e.submit(t, add("gpu01", nil, e.now.Add(time.Hour), "after the long one"), 1001)
	e.applyLogged(t)
	if got := e.outcome(t, after, 1001); got.Error != "" || got.Note.ID == 0 {
		t.Errorf("the note after the long name: %+v", got)
	}
	if got := e.outcome(t, long, 1000).Error; !strings.HasPrefix(got, "refused: not a request") {
		t.Errorf("long name's outcome %q", got)
	}
	if ents, _ := os.ReadDir(pending); len(ents) != 0 {
		t.Errorf("left pending: %v", ents)
	}
}

// What can never be a request is removed from pending/ with a log line;
// a file named as the writer names its temporary file, changed within a
// minute of now (either way), may be one being written and stays. A
// directory is removed only when empty: one with files stays, named in
// the log once with its owner.
func TestApplyRemovesJunk(t *testing.T) {
	e := newQueueEnv(t)
	pending := pendingDir(NotesDir(e.dir))
	old, ahead := e.now.Add(-2*time.Minute), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []struct {
		path string
		at   time.Time
	}{
		{"notes.txt", old},
		{".old.tmp", old},
		{".young.tmp", e.now}, // hidden, but not a writer's name
		{".0123456789abcdef.tmp", e.now.Add(-30 * time.Second)},
		{".00000000000000ff.tmp", e.now.Add(30 * time.Second)}, // a clock a little ahead
		{".fedcba9876543210.tmp", ahead},                       // touch -d 2100-01-01
		{".0123456789abcdeX.tmp", e.now},
		{"dir.json/x", old},
		{"dir/y", old},
	} {
		full := filepath.Join(pending, f.path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, f.at, f.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(pending, "dir"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	// An empty directory, even one its owner may not read, goes.
	if err := os.Mkdir(filepath.Join(pending, "empty"), 0); err != nil {
		t.Fatal(err)
	}
	id := e.submit(t, add("gpu02", nil, e.now.Add(time.Hour), "kept"), 1000)
	log := e.applyLogged(t)
	if got := e.outcome(t, id, 1000); got.Error != "" {
		t.Errorf("request among the junk: %+v", got)
	}
	want := []string{".00000000000000ff.tmp", ".0123456789abcdef.tmp", "dir", "dir.json"}
	if diff := cmp.Diff(want, dirNames(t, pending)); diff != "" {
		t.Errorf("left pending (-want +got):\n%s", diff)
	}
	for _, p := range []string{"notes.txt", ".old.tmp", ".young.tmp", ".fedcba9876543210.tmp", ".0123456789abcdeX.tmp", "empty"} {
		if !strings.Contains(log, `"not a note request, removed from the queue" path=`+filepath.Join(pending, p)+" ") {
			t.Errorf("no log line for %s in:\n%s", p, log)
		}
	}
	// The writer never walks a user's tree.
	if _, err := os.Stat(filepath.Join(pending, "dir", "y")); err != nil {
		t.Errorf("a file inside a user's directory: %v", err)
	}
	stuck := `msg="not a note request, and the writer may not remove it (a directory is removed only when empty): remove it by hand" path=` + filepath.Join(pending, "dir") + " uid=1000"
	if !strings.Contains(log, stuck) || !strings.Contains(log, filepath.Join(pending, "dir.json")+" uid=0") {
		t.Errorf("first pass does not name the directories it may not remove, with their owners:\n%s", log)
	}
	// Named once: the next pass says nothing of them.
	if log := e.applyLogged(t); strings.Contains(log, "may not remove") {
		t.Errorf("second pass names them again:\n%s", log)
	}
	// Emptied by hand, a directory goes on the next pass and is
	// forgotten.
	if err := os.Remove(filepath.Join(pending, "dir", "y")); err != nil {
		t.Fatal(err)
	}
	e.applyLogged(t)
	if m := readMemory(memoryFile(pending)); !cmp.Equal(m.Names, []string{"dir.json"}) {
		t.Errorf("remembered %v, want dir.json alone", m.Names)
	}
}

// dirNames are the names in d, sorted.
func dirNames(t *testing.T, d string) []string {
	t.Helper()
	ents, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range ents {
		names = append(names, en.Name())
	}
	return names
}

// Outcomes older than AppliedKeep go; younger ones stay.
func TestApplyPrunesOutcomes(t *testing.T) {
	e := newQueueEnv(t)
	applied := appliedDir(NotesDir(e.dir))
	for name, age := range map[string]time.Duration{"old.u1.json": AppliedKeep + time.Hour, "young.u1.json": AppliedKeep - time.Hour} {
		p := filepath.Join(applied, name)
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := e.now.Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	e.applyLogged(t)
	if _, err := os.Stat(filepath.Join(applied, "old.u1.json")); !os.IsNotExist(err) {
		t.Errorf("old outcome kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(applied, "young.u1.json")); err != nil {
		t.Errorf("young outcome gone: %v", err)
	}
}

// A user keeps at most MaxActivePerUser notes in force, on nodes and
// GPUs that are; root is not capped.
func TestApplyNoteLimits(t *testing.T) {
	e := newQueueEnv(t)
	until := e.now.Add(time.Hour)
	var ids []string
	for i := 0; i <= MaxActivePerUser; i++ {
		ids = append(ids, e.submit(t, add("gpu01", nil, until, "n"+strconv.Itoa(i)), 1000))
	}
	for i := 0; i <= MaxActivePerUser; i++ {
		e.submit(t, add("gpu02", nil, until, "root's"), 0)
	}
	nine := 9
	unknown := e.submit(t, add("0000", nil, until, "junk"), 1001)
	noGPU := e.submit(t, add("gpu01", &nine, until, "junk"), 1001)
	// A long text refused keeps a short outcome.
	big := e.submit(t, add("gpu01", nil, until, strings.Repeat("x", 60_000)), 1001)
	e.applyLogged(t)
	// The requests of one second apply in their names' order: any one
	// of the 21 is the one past the cap.
	var refusals []string
	for _, id := range ids {
		if got := e.outcome(t, id, 1000); got.Error != "" {
			refusals = append(refusals, got.Error)
		}
	}
	want := []string{"refused: user1000 has 20 notes in force, the most one user may keep: remove one ('gpuacct note rm ID') or let one end"}
	if diff := cmp.Diff(want, refusals); diff != "" {
		t.Errorf("uid 1000's refusals (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		id    string
		owner int
		err   string
	}{
		{unknown, 1001, `refused: no node "0000" in the ledger or the live snapshots (gpuacct status lists them)`},
		{noGPU, 1001, "refused: node gpu01 has 4 GPU(s), 0..3: GPU 9 is not one of them"},
		{big, 1001, "refused: --text is 60000 characters, more than 280: shorten it"},
	} {
		if got := e.outcome(t, tc.id, tc.owner).Error; got != tc.err {
			t.Errorf("outcome %q, want %q", got, tc.err)
		}
	}
	if fi, err := os.Stat(filepath.Join(appliedDir(NotesDir(e.dir)), outcomeName(big, 1001))); err != nil || fi.Size() > 4096 {
		t.Errorf("refused 60 kB request kept %v bytes (%v), want a short outcome", fi.Size(), err)
	}
	kept, err := e.st.Notes(context.Background(), e.now, false)
	if err != nil || len(kept) != 2*MaxActivePerUser+1 {
		t.Errorf("%d notes in force (%v), want %d", len(kept), err, 2*MaxActivePerUser+1)
	}
}
