package notecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// now is a Monday morning; report.tz is Berlin (CET).
var now = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// fixture is a ledger knowing gpu01 (4 GPUs) and gpu02 (2), a live
// snapshot of gpu09 (2 GPUs) and a config naming them.
type fixture struct {
	cfg, reqs string
	// db is the ledger, on the engine under test.
	db ledgerdb.Ledger
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testkit.NeedRoot(t, "give request files to other users (chown)")
	root := t.TempDir()
	f := &fixture{cfg: filepath.Join(root, "gpusuite.toml"), db: ledgerdb.NewLedger(t), reqs: filepath.Join(root, "requests")}
	live := filepath.Join(root, "live")
	key := "path = \"" + f.db.Path + "\""
	if f.db.URL != "" {
		key = "url = \"" + f.db.URL + "\""
	}
	cfg := "[cluster]\nname = \"c1\"\n[store]\n" + key + "\n[report]\nrequests = \"" + f.reqs + "\"\ntz = \"Europe/Berlin\"\n[board]\nlive_dir = \"" + live + "\"\n"
	if err := os.WriteFile(f.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for node, gpus := range map[string]int{"gpu01": 4, "gpu02": 2} {
		n, err := b.Node("c1", node)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < gpus; i++ {
			idx := i
			if _, err := b.GPU("GPU-"+node+"-"+strconv.Itoa(i), n, &idx, nil, "H100"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: "gpu09", Time: now, Interval: 10,
		GPUs: []record.LiveGPU{{Index: 0, UUID: "GPU-x"}, {Index: 1, UUID: "GPU-y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, record.LiveFileName("gpu09")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs gpuacct ARGS as euid (the process itself stays root) and
// returns the exit code, stdout and stderr.
func (f *fixture) run(t *testing.T, euid int, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	d := Deps{Stdout: &out, Stderr: &errb, Now: func() time.Time { return now },
		Getenv: func(k string) string {
			if k == "GPUSUITE_CONFIG" {
				return f.cfg
			}
			return ""
		},
		Euid:       func() int { return euid },
		Username:   func() string { return "typed-name" },
		LookupUser: lookupUser,
	}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()}, Commands: []*cli.Command{Command(d)}}
	cliwire.Prepare(app)
	err := app.Run(cliwire.Reorder(app, append([]string{"gpuacct"}, args...))) // as cliwire.Run does
	return cliwire.Finish("gpuacct", &errb, err), out.String(), errb.String()
}

func (f *fixture) mustRun(t *testing.T, euid int, args ...string) string {
	t.Helper()
	code, out, errs := f.run(t, euid, args...)
	if code != 0 {
		t.Fatalf("gpuacct %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// serve holds the writer lock, as gpuacct serve does, until released;
// pass applies the queue as serve's pass does, naming uids 1000 and 1001.
type serve struct {
	st   *store.Ledger
	reqs string
}

func (f *fixture) serve(t *testing.T) *serve {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &serve{st: st, reqs: f.reqs}
}

// lookupUser names the test's users.
func lookupUser(uid int) (string, error) {
	return map[int]string{0: "root", 1000: "alice", 1001: "bob"}[uid], nil
}

func (s *serve) pass(t *testing.T) {
	t.Helper()
	if _, err := requests.Apply(context.Background(), s.st, requests.Options{Dir: s.reqs, Now: now, Cluster: "c1",
		Trusted: func(uid int) bool { return uid == 0 }, UserName: lookupUser}); err != nil {
		t.Fatal(err)
	}
}

// queuedAs files a request with the CLI while serve holds the lock, and
// gives the request file to uid, as if uid had run the command.
func (f *fixture) queuedAs(t *testing.T, uid int, args ...string) {
	t.Helper()
	out := f.mustRun(t, 0, args...)
	_, rest, ok := strings.Cut(out, "request ")
	path, _, ok2 := strings.Cut(rest, " queued")
	if !ok || !ok2 {
		t.Fatalf("gpuacct %s did not queue: %s", strings.Join(args, " "), out)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// history makes the notes the golden lists show: root's, one removed,
// alice's (filed while serve runs), bob's refused removal of it, and one
// still pending.
func (f *fixture) history(t *testing.T) {
	t.Helper()
	f.mustRun(t, 0, "note", "add", "gpu01:3", "--until", "3d", "--text", "booked for the NeurIPS run")
	f.mustRun(t, 0, "note", "add", "gpu02", "--until", "2026-03-02T18:00", "--text", `fan noisy, <b>do not use</b> & "ask" first`)
	f.mustRun(t, 0, "note", "add", "gpu01", "--until", "1h", "--text", "reboot at 11:00")
	if out := f.mustRun(t, 0, "note", "rm", "3"); out != "note 3 removed\n" {
		t.Errorf("rm said %q", out)
	}
	s := f.serve(t)
	f.queuedAs(t, 1000, "note", "add", "gpu02:1", "--until", "2w", "--text", "alice's experiment, ask before using")
	s.pass(t)
	f.queuedAs(t, 1001, "note", "rm", "4")
	s.pass(t)
	f.queuedAs(t, 1001, "note", "add", "gpu09:1", "--until", "4h", "--text", "pending one")
	s.st.Close()
}

func TestListGolden(t *testing.T) {
	f := newFixture(t)
	f.history(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"list", []string{"note", "list"}},
		{"list_json", []string{"note", "list", "--format", "json"}},
		{"list_all", []string{"note", "list", "--all"}},
		{"list_all_json", []string{"note", "list", "--all", "--format", "json"}},
		{"list_utc", []string{"note", "list", "--tz", "UTC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := f.mustRun(t, 0, tc.args...)
			cmdline.Golden(t, filepath.Join("testdata", tc.name+".golden"), out, *update)
		})
	}
	// The markup is kept as typed, in the JSON too.
	var doc struct {
		Schema string `json:"schema"`
		Notes  []struct {
			Text string `json:"text"`
		} `json:"notes"`
	}
	if err := json.Unmarshal([]byte(f.mustRun(t, 0, "note", "list", "--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != board.NotesSchema {
		t.Errorf("schema %q, want %s", doc.Schema, board.NotesSchema)
	}
	rows := doc.Notes
	found := false
	for _, r := range rows {
		found = found || r.Text == `fan noisy, <b>do not use</b> & "ask" first`
	}
	if !found {
		t.Errorf("markup not kept verbatim in %+v", rows)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	f.mustRun(t, 0, "note", "add", "gpu01", "--until", "1h", "--text", "to remove")
	f.mustRun(t, 0, "note", "add", "gpu01", "--until", "1h", "--text", "root's")
	f.mustRun(t, 0, "note", "rm", "1")
	for _, tc := range []struct {
		name string
		euid int
		args []string
		code int
		err  string
	}{
		{"unknown node", 0, []string{"note", "add", "nodeX", "--until", "4h", "--text", "x"}, 1,
			`gpuacct: note add: no node "nodeX" in the ledger or the live snapshots (gpuacct status lists them)`},
		{"gpu out of range", 0, []string{"note", "add", "gpu02:2", "--until", "4h", "--text", "x"}, 1,
			"gpuacct: note add: node gpu02 has 2 GPU(s), 0..1: GPU 2 is not one of them"},
		{"bad gpu", 0, []string{"note", "add", "gpu02:a", "--until", "4h", "--text", "x"}, 2, `GPU "a" in "gpu02:a" is not an index`},
		{"bad time", 0, []string{"note", "add", "gpu01", "--until", "friday", "--text", "x"}, 2,
			`gpuacct: note add: --until "friday" is neither a duration like 4h or 3d nor a time`},
		{"past time", 0, []string{"note", "add", "gpu01", "--until", "2026-03-01", "--text", "x"}, 2,
			`gpuacct: note add: --until "2026-03-01" (2026-03-01 00:00 CET) is not in the future`},
		{"too far", 0, []string{"note", "add", "gpu01", "--until", "2026-06-01", "--text", "x"}, 2,
			"is more than 90 days ahead: book at most 90 days, and renew the note later"},
		{"empty text", 0, []string{"note", "add", "gpu01", "--until", "4h", "--text", "  "}, 2, "gpuacct: note add: --text is empty"},
		{"over-long text", 0, []string{"note", "add", "gpu01", "--until", "4h", "--text", strings.Repeat("x", 281)}, 2,
			"gpuacct: note add: --text is 281 characters, more than 280: shorten it"},
		{"newline", 0, []string{"note", "add", "gpu01", "--until", "4h", "--text", "a\nb"}, 2, "control character (U+000A)"},
		{"escape", 0, []string{"note", "add", "gpu01", "--until", "4h", "--text", "\x1b[2J"}, 2, "control character (U+001B)"},
		{"no text", 0, []string{"note", "add", "gpu01", "--until", "4h"}, 2, "--until and --text are required"},
		{"two nodes", 0, []string{"note", "add", "gpu01", "gpu02", "--until", "4h", "--text", "x"}, 2, "give one NODE or NODE:GPU"},
		{"unknown option", 0, []string{"note", "add", "gpu01", "--untill", "4h"}, 2, "unknown option --untill"},
		{"rm not a number", 0, []string{"note", "rm", "x"}, 2, `gpuacct: note rm: "x" is not a note ID`},
		{"rm unknown", 0, []string{"note", "rm", "99"}, 1, "gpuacct: note rm: no note 99: 'gpuacct note list --all' lists every note kept"},
		{"rm removed", 0, []string{"note", "rm", "1"}, 1, "gpuacct: note rm: note 1 was removed already, by root at 2026-03-02 10:00Z"},
		{"rm someone else's", 1001, []string{"note", "rm", "2"}, 1,
			"gpuacct: note rm: note 2 is root's (uid 0): only its author, root or the service user may remove it"},
		{"list argument", 0, []string{"note", "list", "x"}, 2, "note list: takes no arguments"},
		{"list format", 0, []string{"note", "list", "--format", "xml"}, 2, `note list: --format "xml" is not table or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, tc.euid, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.err) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line with %q (stdout %q)", code, errs, tc.code, tc.err, out)
			}
		})
	}
}

// While serve holds the writer lock the request stays pending (listed as
// such); serve's pass keeps the note.
func TestQueuedWhileServeRuns(t *testing.T) {
	f := newFixture(t)
	s := f.serve(t)
	out := f.mustRun(t, 0, "note", "add", "gpu01:2", "--until", "4h", "--text", "while serve runs")
	if !strings.Contains(out, "queued; gpuacct serve applies it on its next pass") {
		t.Errorf("add with serve running said %q", out)
	}
	if got := f.mustRun(t, 0, "note", "list"); !strings.Contains(got, "pending  gpu01  2") {
		t.Errorf("list before the pass:\n%s", got)
	}
	if kept, err := s.st.Notes(context.Background(), now, true); err != nil || len(kept) != 0 {
		t.Fatalf("a queued request reached the ledger: %+v, %v", kept, err)
	}
	s.pass(t)
	if got := f.mustRun(t, 0, "note", "list"); !strings.Contains(got, "1   gpu01  2    2026-03-02 15:00 CET  root    while serve runs") {
		t.Errorf("list after the pass:\n%s", got)
	}
}

// examples are the command lines under "Examples:" in a command's help,
// split as a shell would split these (words, "double-quoted" words).
func examples(t *testing.T, c *cli.Command) [][]string {
	t.Helper()
	_, ex, ok := strings.Cut(c.UsageText, "Examples:")
	if !ok {
		t.Fatalf("gpuacct note %s --help has no examples", c.Name)
	}
	var out [][]string
	for _, l := range strings.Split(ex, "\n") {
		var args []string
		for i, part := range strings.Split(strings.TrimSpace(l), `"`) {
			if i%2 == 1 {
				args = append(args, part)
			} else {
				args = append(args, strings.Fields(part)...)
			}
		}
		if len(args) == 0 {
			continue
		}
		if len(args) < 3 || args[0] != "gpuacct" || args[1] != "note" || args[2] != c.Name {
			t.Fatalf("example %q is not a gpuacct note %s command", l, c.Name)
		}
		out = append(out, args[1:])
	}
	return out
}

// Every example in --help runs: the adds, the lists, then the removal of
// note 12 once there are twelve.
func TestHelpExamplesRun(t *testing.T) {
	f := newFixture(t)
	subs := map[string]*cli.Command{}
	for _, c := range Command(Deps{}).Subcommands {
		subs[c.Name] = c
	}
	for _, name := range []string{"add", "list", "rm"} {
		if name == "rm" {
			for i := 0; i < 12; i++ {
				f.mustRun(t, 0, "note", "add", "gpu01", "--until", "1h", "--text", "filler")
			}
		}
		for _, args := range examples(t, subs[name]) {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				f.mustRun(t, 0, args...)
			})
		}
	}
}

// TestRequestsFollowSQLiteLedger: with report.requests left at its
// default, a note filed for a ledger given by --db waits beside that
// ledger, where its serve reads, not under /data/gpusuite.
func TestRequestsFollowSQLiteLedger(t *testing.T) {
	f := newFixture(t)
	cfg, err := os.ReadFile(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("requests = \""+f.reqs+"\"\n"), nil, 1)
	cfg = bytes.Replace(cfg, []byte("path = \""+f.db.Path+"\"\n"), nil, 1)
	if err := os.WriteFile(f.cfg, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, 0, "note", "add", "gpu01", "--until", "4h", "--text", "beside the ledger", "--db", f.db.Path)
	want := filepath.Join(filepath.Dir(f.db.Path), "requests", "notes")
	if fi, err := os.Stat(want); err != nil || !fi.IsDir() {
		t.Errorf("the note queue beside the ledger: %v; want %s", err, want)
	}
}
