package notifycmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// now is three hours into alice's job 1, whose GPU has been idle since
// its start.
var now = t0.Add(3 * time.Hour)

type fixture struct {
	cfg   string
	db    ledgerdb.Ledger
	sink  *smtpsink.Sink
	stamp string
}

// newFixture is a ledger holding alice's idle job 1 and a config that
// mails {user}-STAMP@example.org through the test's SMTP sink; extra is
// appended to the config.
func newFixture(t testing.TB, extra string) *fixture {
	t.Helper()
	f := &fixture{db: ledgerdb.NewLedger(t), sink: smtpsink.Shared(t), stamp: strconv.FormatInt(time.Now().UnixNano(), 36)}
	st, err := store.Open(context.Background(), store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	ledgerdb.Tx(t, f.db.Loc(), func(exec func(q string, args ...any)) {
		exec(`INSERT INTO nodes (id, cluster, name) VALUES (1, 'c', 'gpu01')`)
		exec(`INSERT INTO jobs (id, cluster, job_id, user, account, partition, gpus, start) VALUES (1, 'c', 1, 'alice', 'proj', 'gpu', 1, ?)`, t0.Unix())
		exec(`INSERT INTO gpus (id, uuid, node_id, idx) VALUES (1, 'GPU-1', 1, 0)`)
		exec(`INSERT INTO job_gpus (job, gpu_id, node_id) VALUES (1, 1, 1)`)
		for at := t0; at.Before(now); at = at.Add(5 * time.Minute) {
			exec(`INSERT INTO series_buckets (gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms,
 power_w_ms, power_ms, energy_mj, energy_n) VALUES (1, 1, 0, ?, 30, ?, ?, 300000, 300000, 0, 0, 0, 0, 0, 0, 0)`,
				at.UnixMilli(), at.UnixMilli(), at.Add(5*time.Minute).UnixMilli())
		}
	})
	host, port, _ := strings.Cut(f.sink.Addr, ":")
	key := "path = \"" + f.db.Path + "\""
	if f.db.URL != "" {
		key = "url = \"" + f.db.URL + "\""
	}
	f.cfg = filepath.Join(t.TempDir(), "gpusuite.toml")
	cfg := fmt.Sprintf("[store]\n%s\n[report]\ntz = \"UTC\"\n[notify.mail]\nhost = %q\nport = %s\naddress = \"{user}-%s@example.org\"\n%s", key, host, port, f.stamp, extra)
	if err := os.WriteFile(f.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs gpuacct notify ARGS as euid, user and returns the exit code,
// stdout and stderr.
func (f *fixture) run(t *testing.T, euid int, user string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	d := Deps{Stdout: &out, Stderr: &errb, Now: func() time.Time { return now },
		Getenv: func(k string) string {
			if k == "GPUSUITE_CONFIG" {
				return f.cfg
			}
			return ""
		},
		Caller: func() (int, string) { return euid, user },
	}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()}, Commands: []*cli.Command{Command(d)}}
	cliwire.Prepare(app)
	err := app.Run(cliwire.Reorder(app, append([]string{"gpuacct", "notify"}, args...)))
	return cliwire.Finish("gpuacct", &errb, err), out.String(), errb.String()
}

// TestBadUse: a bad config or command line is one line naming what is
// wrong, exit 2.
func TestBadUse(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		args        []string
		want        string
	}{
		{"unknown rule", "[notify.idel]\nidle_after = \"1h\"\n", []string{"--once"}, `unknown key "notify.idel"`},
		{"threshold 0", "[notify.idle]\nidle_after = \"0s\"\n", []string{"--once"}, `key "notify.idle.idle_after": 0s is outside 5m..720h`},
		{"bad address", "[notify.webhooks.ops]\nurl = \"https://x/y\"\nformat = \"json\"\n[notify.idle]\nwebhook = \"opz\"\n", []string{"--once"}, `key "notify.idle.webhook"`},
		{"bad language", "[notify]\nlanguage = \"de\"\n", []string{"test", "--to", "a@example.org"}, `key "notify.language": "de" is not one of en, ja`},
		{"bad admin address", "[notify.digest]\nadmins = [\"ops at example\"]\n", []string{"--once"}, `key "notify.digest.admins": "ops at example" is not a mail address`},
		{"advice threshold 0", "[notify.digest.advice]\nsmall_util = 0\n", []string{"preview", "digest"}, `key "notify.digest.advice.small_util"`},
		{"nothing to do", "", nil, "give --once, or a command"},
		{"unknown command", "", []string{"sned"}, `no command "sned"`},
		{"unknown rule to preview", "", []string{"preview", "weekly"}, `no rule "weekly" (rules: idle, digest)`},
		{"test without --to", "", []string{"test"}, "give --to ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.extra)
			code, out, errs := f.run(t, 0, "root", tc.args...)
			if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line saying %s", code, out, errs, tc.want)
			}
		})
	}
}

// TestPreviewAdminDigest: notify preview digest shows the admins' digest
// to each address of notify.digest.admins, and keeps nothing.
func TestPreviewAdminDigest(t *testing.T) {
	f := newFixture(t, "[notify.digest]\nenabled = true\nadmins = [\"ops@example.org\"]\n")
	code, out, errs := f.run(t, 0, "root", "preview", "digest")
	if code != 0 || !strings.Contains(out, "To: ops@example.org (mail, en)\nSubject: [gpusuite] cluster week 2026-W09: 0.00 GPU-h\n") ||
		!strings.Contains(out, "Messages: 0 queued, 0 sent, 0 given up\n") {
		t.Fatalf("preview: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := f.run(t, 0, "root", "list"); code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("list after a preview: exit %d\n%s; want the header alone", code, out)
	}
}

// TestOnceListPreview: preview shows the message and keeps nothing;
// --once sends it once; list shows it sent, to root and to its user only.
func TestOnceListPreview(t *testing.T) {
	f := newFixture(t, "")
	to := "alice-" + f.stamp + "@example.org"
	code, out, errs := f.run(t, 0, "root", "preview", "idle")
	if code != 0 || !strings.Contains(out, "To: "+to+" (mail, en)\nSubject: [gpusuite] job 1 on c: 1 of 1 GPU idle for 3 h\n") || !strings.Contains(out, "scancel 1\n") {
		t.Fatalf("preview: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = f.run(t, 0, "root", "list")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("list after a preview: exit %d, %q %s; want the header alone", code, out, errs)
	}
	for i, want := range []string{
		"1 running jobs looked at; 1 messages decided, 1 new; 1 sent, 0 to retry, 0 given up\n",
		"1 running jobs looked at; 1 messages decided, 0 new; 0 sent, 0 to retry, 0 given up\n",
	} {
		code, out, errs := f.run(t, 0, "root", "--once")
		if code != 0 || out != want {
			t.Fatalf("--once #%d: exit %d, %q %s; want %q", i+1, code, out, errs, want)
		}
	}
	if got := f.sink.To(t, to, 0); len(got) != 1 {
		t.Errorf("%d messages to %s, want 1", len(got), to)
	}
	for _, tc := range []struct {
		name      string
		euid      int
		user      string
		args      []string
		code      int
		wantLines int
		want      string
	}{
		{"root, by job", 0, "root", []string{"list", "--job", "1", "--format", "csv"}, 0, 2, ",sent,1,"},
		{"its user", 1000, "alice", []string{"list", "--format", "csv"}, 0, 2, "," + to + ","},
		{"another user", 1001, "bob", []string{"list", "--format", "csv"}, 0, 1, "id,created"},
		{"another user asking", 1001, "bob", []string{"list", "--user", "alice"}, 1, 0, "only root and the service user"},
		{"other job", 0, "root", []string{"list", "--job", "2", "--format", "csv"}, 0, 1, "id,created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, tc.euid, tc.user, tc.args...)
			if code != tc.code || strings.Count(out, "\n") != tc.wantLines || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, %d lines, %q", code, out, errs, tc.code, tc.wantLines, tc.want)
			}
		})
	}
}

// TestTestMessage: notify test sends one message through the configured
// server at once, and keeps nothing.
func TestTestMessage(t *testing.T) {
	f := newFixture(t, "")
	to := "ops-" + f.stamp + "@example.org"
	code, out, errs := f.run(t, 0, "root", "test", "--to", to)
	if code != 0 || !strings.HasPrefix(out, "sent a test message to "+to) {
		t.Fatalf("exit %d, %q %s", code, out, errs)
	}
	got := f.sink.To(t, to, 1)
	if len(got) != 1 || got[0].Subject != "[gpusuite] test message" {
		t.Errorf("messages %+v, want the test message", got)
	}
}

// TestOnceWhileServeWrites: --once refuses while another writer holds
// the ledger, exit 1.
func TestOnceWhileServeWrites(t *testing.T) {
	f := newFixture(t, "")
	st, err := store.Open(context.Background(), store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, out, errs := f.run(t, 0, "root", "--once")
	if code != 1 || out != "" || !strings.Contains(errs, "another writer holds the ledger") {
		t.Errorf("exit %d, %q %q; want exit 1 saying another writer holds the ledger", code, out, errs)
	}
}
