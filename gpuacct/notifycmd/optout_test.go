package notifycmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit"
)

// TestOptOutThroughQueue: root's notify off is applied at once when no
// writer runs; alice's, filed while serve holds the ledger, says queued,
// and serve's pass opts alice (the file's owner) out: the idle rule then
// sends her nothing. notify on takes it back. A bad rule is one line,
// exit 2.
func TestOptOutThroughQueue(t *testing.T) {
	testkit.NeedRoot(t, "give the request file to alice (chown)")
	f := newFixture(t, "")
	reqs := filepath.Join(t.TempDir(), "requests")
	ctx := context.Background()
	optOuts := func(user string) []string {
		t.Helper()
		st, err := store.Open(ctx, store.Options{Path: f.db.Path, URL: f.db.URL, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		got, err := st.NotifyOptOuts(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown rule", []string{"off", "--rule", "idel"}, `notify off: --rule "idel" is not a rule (rules: idle, digest, jobend, all)`},
		{"no rule", []string{"on"}, "notify on: give --rule RULE"},
		{"an argument", []string{"off", "idle"}, "notify off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, 0, "root", append(tc.args, "--requests", reqs)...)
			if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line saying %s", code, out, errs, tc.want)
			}
		})
	}

	code, out, errs := f.run(t, 0, "root", "off", "--rule", "digest", "--requests", reqs)
	if code != 0 || out != "root gets no more of digest's messages\n" {
		t.Fatalf("root's notify off: exit %d, %q %s", code, out, errs)
	}
	if d := cmp.Diff([]string{"digest"}, optOuts("root")); d != "" {
		t.Errorf("root's opt-outs (-want +got):\n%s", d)
	}

	// serve holds the ledger: alice's request waits, and says so.
	st, err := store.Open(ctx, store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, out, errs = f.run(t, 0, "root", "off", "--rule", "idle", "--requests", reqs)
	_, rest, _ := strings.Cut(out, "request ")
	path, _, ok := strings.Cut(rest, " queued;")
	if code != 0 || !ok || !strings.HasPrefix(out, "notify off: request ") {
		t.Fatalf("notify off while serve runs: exit %d, %q %s; want queued", code, out, errs)
	}
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	pass := func() {
		t.Helper()
		if _, err := requests.Apply(ctx, st, requests.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return uid == 0 },
			UserName: func(uid int) (string, error) { return map[int]string{0: "root", 1000: "alice"}[uid], nil }}); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	if d := cmp.Diff([]string{"idle"}, optOuts("alice")); d != "" {
		t.Errorf("alice's opt-outs after serve's pass (-want +got):\n%s", d)
	}
	st.Close()
	code, out, errs = f.run(t, 0, "root", "preview", "idle")
	if code != 0 || out != "rule idle would send nothing now\n" {
		t.Errorf("preview after alice's opt-out: exit %d, %q %s", code, out, errs)
	}

	// And back: alice's notify on, applied by serve, brings the mail back.
	st, err = store.Open(ctx, store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = f.run(t, 0, "root", "on", "--rule", "idle", "--requests", reqs)
	_, rest, _ = strings.Cut(out, "request ")
	path, _, _ = strings.Cut(rest, " queued;")
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatalf("notify on said %q: %v", out, err)
	}
	pass()
	st.Close()
	if got := optOuts("alice"); len(got) != 0 {
		t.Errorf("alice's opt-outs after notify on: %v", got)
	}
	code, out, errs = f.run(t, 0, "root", "preview", "idle")
	if code != 0 || !strings.Contains(out, "Subject: [gpusuite] job 1 on c") {
		t.Errorf("preview after notify on: exit %d, %q %s", code, out, errs)
	}
}
