package reportcmd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/testkit"
)

// The writer's bounds are checked before filing: a 70 KB reason, or more
// job ids than one request takes, was filed, refused by the writer, and
// reported "applied (1 request(s))".
func TestIgnoreBoundsBeforeFiling(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{{ID: 810003, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3600}}, now)
	var many []string
	for i := range requests.MaxJobs + 1 {
		many = append(many, strconv.Itoa(810003+i))
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"long reason", []string{"ignore", "810003", "--reason", strings.Repeat("x", 70_000)},
			"ignore: --reason is 70000 bytes, more than the 4096 a request keeps: shorten it"},
		{"many jobs", append([]string{"ignore", "--reason", "x"}, many...),
			"ignore: 1001 job ids, more than the 1000 one request takes: name at most 1000 at a time"},
		{"unignore long reason", []string{"unignore", "810003", "--reason", strings.Repeat("é", 3000)},
			"unignore: --reason is 6000 bytes, more than the 4096 a request keeps: shorten it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := t.TempDir()
			d, out, _ := testDeps(now, nil)
			err := run(t, d, append(tc.args, dbOpt(path), "--requests", reqs)...)
			if exitCode(err) != 2 || err.Error() != tc.want {
				t.Fatalf("error %v, want exit 2 with %q (printed %q)", err, tc.want, out.String())
			}
			if ents, _ := os.ReadDir(filepath.Join(reqs, "pending")); len(ents) != 0 {
				t.Errorf("filed %d request(s) past the bounds", len(ents))
			}
		})
	}
}

// The command reports what the writer decided: a refused request is a
// failure naming the refusal, never "applied".
func TestIgnoreReportsRefusal(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{{ID: 10, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3600}}, now)
	reqs := t.TempDir()
	if err := requests.MakeQueues(reqs, -1); err != nil {
		t.Fatal(err)
	}
	r := &requests.Request{Action: requests.Ignore, Jobs: []string{"10"}, Reason: "x", By: "root", UID: 0, Time: now}
	p, err := requests.Submit(reqs, r)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	// A writer that trusts nobody refuses it.
	_, err = requests.Apply(context.Background(), st, requests.Options{Dir: reqs, Now: now, Trusted: func(int) bool { return false }})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	d, out, _ := testDeps(now, nil)
	err = reportOutcomes(d, reqs, requests.Ignore, []*requests.Request{r}, []string{p})
	if exitCode(err) != 1 || !strings.HasPrefix(err.Error(), "ignore 10: refused: owned by uid 0, not root or the service user") {
		t.Errorf("refused request: %v (exit 1 naming the refusal wanted)", err)
	}
	if strings.Contains(out.String(), "applied") {
		t.Errorf("a refused request reported as %q", out.String())
	}
	// One not applied yet is queued.
	q := &requests.Request{Action: requests.Ignore, Jobs: []string{"10"}, Reason: "x", By: "root", UID: 0, Time: now}
	p, err = requests.Submit(reqs, q)
	if err != nil {
		t.Fatal(err)
	}
	d, out, _ = testDeps(now, nil)
	if err := reportOutcomes(d, reqs, requests.Ignore, []*requests.Request{q}, []string{p}); err != nil || !strings.Contains(out.String(), "queued") {
		t.Errorf("pending request: %v, said %q", err, out.String())
	}
}

// Run as root, the command leaves the queue to the service user (the
// owner of the request directory here), as serve makes it: a root-owned
// pending/ could not be emptied by serve.
func TestIgnoreAsRootQueueOwner(t *testing.T) {
	testkit.NeedRoot(t, "give the request directory to another user (chown)")
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{{ID: 10, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3600}}, now)
	reqs := filepath.Join(t.TempDir(), "requests")
	if err := os.Mkdir(reqs, 0o755); err != nil {
		t.Fatal(err)
	}
	// An earlier root run left pending/ root's.
	if err := os.Mkdir(filepath.Join(reqs, "pending"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(reqs, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, "ignore", "10", "--reason", "x", dbOpt(path), "--requests", reqs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ignore 10: applied") {
		t.Errorf("said %q", out.String())
	}
	for _, sub := range []string{"pending", "applied", "notes", "notes/pending", "notes/applied"} {
		fi, err := os.Stat(filepath.Join(reqs, sub))
		if err != nil {
			t.Fatal(err)
		}
		if uid := ownerUID(fi); uid != 4321 {
			t.Errorf("%s owned by uid %d, want the service user's 4321", sub, uid)
		}
	}
}

func ownerUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
