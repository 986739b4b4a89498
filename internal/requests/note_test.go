package requests

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

func TestCheckText(t *testing.T) {
	long := strings.Repeat("é", MaxTextRunes)
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"trimmed", "  booked for the NeurIPS run \n", "booked for the NeurIPS run", ""},
		{"markup kept", `<script>alert("x")</script> & co`, `<script>alert("x")</script> & co`, ""},
		{"280 runes", long, long, ""},
		{"empty", "", "", "--text is empty"},
		{"blank", " \t ", "", "--text is empty"},
		{"281 runes", long + "x", "", "--text is 281 characters, more than 280"},
		{"newline", "fan noisy\ndo not use", "", "control character (U+000A) at character 10"},
		{"tab", "a\tb", "", "control character (U+0009)"},
		{"escape", "a\x1b[31mred", "", "control character (U+001B)"},
		{"C1 control", "a\u0085b", "", "control character (U+0085)"},
		{"invalid utf-8", "a\xffb", "", "not valid UTF-8"},
		{"right-to-left override", "booked \u202eNUR", "", "invisible format character (U+202E) at character 8"},
		{"zero-width space", "a\u200bb", "", "invisible format character (U+200B)"},
		{"byte order mark", "\ufeffa", "", "invisible format character (U+FEFF)"},
		{"line separator", "fan noisy\u2028do not use", "", "line separator (U+2028) at character 10"},
		{"paragraph separator", "a\u2029b", "", "line separator (U+2029)"},
		{"no-break space kept", "a\u00a0b", "a\u00a0b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckText(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CheckText(%q) error %v, want one saying %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CheckText(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// checkNote refuses what the writer may not keep, whoever wrote the
// file.
func TestCheckNote(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		edit func(r *Request)
		err  string
	}{
		{"well formed", func(*Request) {}, ""},
		{"until at the limit", func(r *Request) { r.Note.Until = now.Add(MaxAhead) }, ""},
		{"until past", func(r *Request) { r.Note.Until = now.Add(-time.Hour) },
			"refused: until 2026-03-02T09:00:00Z is not after now (2026-03-02T10:00:00Z): a note ends in the future"},
		{"until now", func(r *Request) { r.Note.Until = now }, "refused: until 2026-03-02T10:00:00Z is not after now"},
		{"until zero", func(r *Request) { r.Note.Until = time.Time{} }, "refused: until 0001-01-01T00:00:00Z is not within"},
		{"until too far", func(r *Request) { r.Note.Until = now.Add(MaxAhead + 48*time.Hour) }, "refused: until 2026-06-02T10:00:00Z is not within"},
		{"reason", func(r *Request) { r.Reason = "x" }, "refused: a note request carries no reason: the note's text says it"},
		{"host 253 bytes", func(r *Request) { r.Host = strings.Repeat("h", 253) }, ""},
		{"host 254 bytes", func(r *Request) { r.Host = strings.Repeat("h", 254) }, "refused: host is 254 bytes, more than the 253 of a host name"},
		{"cluster 60 KiB", func(r *Request) { r.Cluster = strings.Repeat("c", 60<<10) }, "refused: cluster is 61440 bytes, more than 253"},
		{"jobs", func(r *Request) { r.Jobs = []string{"1"} }, "refused: a note request carries one note and no jobs"},
		{"schema", func(r *Request) { r.Schema = Schema }, `refused: schema "gpusuite.ignore/v1" is not gpusuite.note/v1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := add("gpu01", nil, now.Add(time.Hour), "x")
			r.Schema, r.Host, r.Cluster = NoteSchema, "login1", "c"
			tc.edit(r)
			err := checkNote(r, 0o644, now)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// queueEnv is a ledger and a request directory, as the writer sees them.
type queueEnv struct {
	st  *store.Ledger
	dir string
	now time.Time
	// loc is the ledger's location, for ledgerdb's helpers.
	loc string
}

func newQueueEnv(t *testing.T) *queueEnv {
	t.Helper()
	testkit.NeedRoot(t, "give request files to other users (chown)")
	root := t.TempDir()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &queueEnv{st: st, dir: filepath.Join(root, "requests"), now: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), loc: l.Loc()}
	if err := MakeQueues(e.dir, -1); err != nil {
		t.Fatal(err)
	}
	// The ledger knows gpu01 (4 GPUs) and gpu02 (2): notes go on them.
	b, err := st.Begin(context.Background(), e.now)
	if err != nil {
		t.Fatal(err)
	}
	for node, gpus := range map[string]int{"gpu01": 4, "gpu02": 2} {
		n, err := b.Node("c", node)
		if err != nil {
			t.Fatal(err)
		}
		for i := range gpus {
			if _, err := b.GPU("GPU-"+node+"-"+strconv.Itoa(i), n, &i, nil, "H100"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return e
}

// submit files r as uid owner (the file is given to owner, as if owner
// had written it) and returns its id.
func (e *queueEnv) submit(t *testing.T, r *Request, owner int) string {
	t.Helper()
	r.Time = e.now
	path, err := Submit(e.dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, owner, owner); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func (e *queueEnv) apply(t *testing.T) {
	t.Helper()
	_, err := Apply(context.Background(), e.st, Options{Dir: e.dir, Now: e.now, Cluster: "c",
		Trusted: func(uid int) bool { return uid == 0 || uid == 999 },
		UserName: func(uid int) (string, error) {
			if uid == 1001 {
				return "", errors.New("no such user")
			}
			return "user" + strconv.Itoa(uid), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *queueEnv) outcome(t *testing.T, id string, owner int) Request {
	t.Helper()
	r, err := NoteOutcome(e.dir, id, owner)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func add(node string, gpu *int, until time.Time, text string) *Request {
	return &Request{Action: NoteAdd, Note: &Note{Node: node, GPU: gpu, Until: until, Text: text}, By: "root", UID: 0}
}

func rm(id int64) *Request {
	return &Request{Action: NoteRemove, Note: &Note{ID: id}, By: "root", UID: 0}
}

func TestNotesQueueModes(t *testing.T) {
	e := newQueueEnv(t)
	fi, err := os.Stat(pendingDir(NotesDir(e.dir)))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (fs.ModePerm | fs.ModeSticky); got != notesPendingMode {
		t.Errorf("pending mode %v, want %v", got, notesPendingMode)
	}
	// A mode changed by hand is put back on the next pass.
	if err := os.Chmod(pendingDir(NotesDir(e.dir)), 0o777); err != nil {
		t.Fatal(err)
	}
	e.apply(t)
	if fi, _ := os.Stat(pendingDir(NotesDir(e.dir))); fi.Mode()&(fs.ModePerm|fs.ModeSticky) != notesPendingMode {
		t.Errorf("pending mode %v after a pass, want %v", fi.Mode(), notesPendingMode)
	}
}

// The author is the request file's owner, never the uid the file names;
// only the author, root or the service user may remove a note.
func TestApplyNoteRequests(t *testing.T) {
	e := newQueueEnv(t)
	until := e.now.Add(48 * time.Hour)
	three := 3
	// uid 1000 writes a note claiming to be root.
	a := e.submit(t, add("gpu01", &three, until, " booked <b>NeurIPS</b> "), 1000)
	b := e.submit(t, add("gpu02", nil, until, "fan noisy"), 1001)
	e.apply(t)
	ra, rb := e.outcome(t, a, 1000), e.outcome(t, b, 1001)
	if ra.Error != "" || rb.Error != "" || ra.Note.ID == 0 || rb.Note.ID == 0 {
		t.Fatalf("adds: %+v / %+v", ra, rb)
	}
	if ra.UID != 1000 || ra.By != "user1000" {
		t.Errorf("outcome says uid %d (%s) asked, want the owner 1000 (user1000)", ra.UID, ra.By)
	}
	got, err := e.st.Notes(context.Background(), e.now, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Note{
		{ID: ra.Note.ID, Cluster: "c", Node: "gpu01", GPU: &three, Until: until, Text: "booked <b>NeurIPS</b>", Author: "user1000", UID: 1000, Created: e.now},
		{ID: rb.Note.ID, Cluster: "c", Node: "gpu02", Until: until, Text: "fan noisy", Author: "uid 1001", UID: 1001, Created: e.now},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name  string
		id    int64
		owner int
		err   string
	}{
		{"someone else's", ra.Note.ID, 1001, "refused: note " + strconv.FormatInt(ra.Note.ID, 10) + " is user1000's (uid 1000): only its author, root or the service user may remove it"},
		{"unknown", 999, 1000, "refused: no note 999"},
		{"author", ra.Note.ID, 1000, ""},
		{"removed already", ra.Note.ID, 1000, "refused: note " + strconv.FormatInt(ra.Note.ID, 10) + " was removed already, by user1000 at 2026-03-02 10:00Z"},
		{"service user", rb.Note.ID, 999, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.submit(t, rm(tc.id), tc.owner)
			e.apply(t)
			out := e.outcome(t, id, tc.owner)
			if !strings.HasPrefix(out.Error, tc.err) || (tc.err == "") != (out.Error == "") {
				t.Errorf("outcome error %q, want %q", out.Error, tc.err)
			}
		})
	}
	left, err := e.st.Notes(context.Background(), e.now, false)
	if err != nil || len(left) != 0 {
		t.Errorf("notes left %+v, %v; want none", left, err)
	}
}

// Files that cannot speak for their owner are refused, kept as refusals,
// and never reach the ledger.
func TestApplyNoteRefusals(t *testing.T) {
	e := newQueueEnv(t)
	pending := pendingDir(NotesDir(e.dir))
	until := e.now.Add(time.Hour)
	big := e.submit(t, add("gpu01", nil, until, "x"), 1000)
	if err := os.WriteFile(filepath.Join(pending, big+".json"), make([]byte, MaxRequestBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := e.submit(t, add("gpu01", nil, until, "x"), 1000)
	if err := os.Chmod(filepath.Join(pending, shared+".json"), 0o666); err != nil {
		t.Fatal(err)
	}
	far := e.submit(t, add("gpu01", nil, e.now.Add(MaxAhead+48*time.Hour), "x"), 1000)
	past := e.submit(t, add("gpu01", nil, e.now.Add(-time.Hour), "x"), 1000)
	ctrl := e.submit(t, add("gpu01", nil, until, "a\nb"), 1000)
	linked := e.submit(t, add("gpu01", nil, until, "x"), 1000)
	if err := os.Link(filepath.Join(pending, linked+".json"), filepath.Join(e.dir, "elsewhere.json")); err != nil {
		t.Fatal(err)
	}
	badNode := e.submit(t, add("../etc", nil, until, "x"), 1000)
	if err := os.Symlink("/etc/passwd", filepath.Join(pending, "link.json")); err != nil {
		t.Fatal(err)
	}
	// A directory with a file in it, which the writer may not empty: it
	// must not stop the requests after it.
	if err := os.MkdirAll(filepath.Join(pending, "0dir.json", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.apply(t)
	for _, tc := range []struct {
		id, err string
	}{
		{big, "refused: 65537 bytes, more than the 65536"},
		{shared, "refused: writable by group or others"},
		{far, "refused: until 2026-06-02T10:00:00Z is not within"},
		{past, "refused: until 2026-03-02T09:00:00Z is not after now (2026-03-02T10:00:00Z): a note ends in the future"},
		{ctrl, "refused: --text holds a control character"},
		{linked, "refused: 2 links to the file"},
		{badNode, `refused: node name "../etc" holds '/'`},
	} {
		if got := e.outcome(t, tc.id, 1000).Error; !strings.HasPrefix(got, tc.err) {
			t.Errorf("%s: outcome %q, want %q", tc.id, got, tc.err)
		}
	}
	// A link is removed without being followed, and speaks for nobody:
	// no outcome.
	for _, name := range dirNames(t, appliedDir(NotesDir(e.dir))) {
		if strings.HasPrefix(name, "link") {
			t.Errorf("link: outcome %s kept", name)
		}
	}
	if n, err := e.st.Notes(context.Background(), e.now, true); err != nil || len(n) != 0 {
		t.Errorf("refused requests kept notes: %+v, %v", n, err)
	}
	// The directory stays (the writer never empties a user's tree);
	// everything else went.
	if ents, _ := os.ReadDir(pending); len(ents) != 1 || ents[0].Name() != "0dir.json" {
		t.Errorf("left pending: %v, want 0dir.json alone", ents)
	}
}

// A request applied again (the writer stopped between its commit and
// moving the file) keeps one note.
func TestApplyNoteAgain(t *testing.T) {
	e := newQueueEnv(t)
	id := e.submit(t, add("gpu01", nil, e.now.Add(time.Hour), "once"), 1000)
	path := filepath.Join(pendingDir(NotesDir(e.dir)), id+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(t)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	e.apply(t)
	if n, err := e.st.Notes(context.Background(), e.now, true); err != nil || len(n) != 1 {
		t.Errorf("%d notes after applying one request twice (%v), want 1", len(n), err)
	}
}
