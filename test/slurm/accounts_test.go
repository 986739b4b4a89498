package slurm_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmtest"
	"github.com/aicloud/gpusuite/internal/store"
)

// accountTreeRow is one line of `gpuacct report tree -t seconds -P -n`:
// team|user|alloc_gpu_seconds|used|eff|idle|kwh|jobs|share|parent|level.
type accountTreeRow struct {
	team, user, parent string
	alloc, level       int64
}

// TestAccountTree: a parent account over two accounts in Slurm, a user
// charging both; one ingest pass (with sacctmgr) records the tree, and
// report tree shows the parent with the sum of its children, each child
// with its user, the GPU-seconds the ledger holds for their jobs, within
// a second a GPU of what sacct charges. The accounts and user are this
// test's own (accounttree*); they are added when missing and never
// deleted (a re-run reuses them; others' accounts are not touched).
func TestAccountTree(t *testing.T) {
	c := slurmtest.Get(t)
	const (
		user = "accounttree"
		org  = "accounttree-org"
		a, b = "accounttree-a", "accounttree-b"
	)
	slurmtest.EnsureUser(t, user)
	gpuacct := slurmtest.Binary(t, "gpuacct")
	sacctmgr := func(args ...string) {
		t.Helper()
		// "Nothing new added" on a re-run exits 1: what is there is
		// checked below.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Cmd(ctx, "", "sacctmgr", append([]string{"-i"}, args...)...).Run()
	}
	sacctmgr("add", "account", org, "Description=accounttree", "Organization=accounttree")
	sacctmgr("add", "account", a+","+b, "parent="+org, "Description=accounttree", "Organization=accounttree")
	sacctmgr("add", "user", user, "account="+a+","+b, "DefaultAccount="+a)
	tree := c.Run(t, "", "sacctmgr", "-n", "-P", "show", "associations", "format=Account,User,ParentName", "where", "account="+org+","+a+","+b)
	for _, want := range []string{org + "||root", a + "||" + org, b + "||" + org, a + "|" + user + "|", b + "|" + user + "|"} {
		if !strings.Contains("\n"+tree, "\n"+want+"\n") {
			t.Fatalf("sacctmgr lacks association %q:\n%s", want, tree)
		}
	}

	ja := c.Sbatch(t, user, "-A", a, "--gres=gpu:2", "--wrap", "sleep 3")
	jb := c.Sbatch(t, user, "-A", b, "--gres=gpu:1", "--wrap", "sleep 2")
	rows := c.WaitAccounted(t, 3*time.Minute, 2, ja, jb)
	sacctSecs := map[string]int64{}
	for _, r := range rows {
		waitEvent(t, c, r.JobIDRaw, record.JobStart, 60*time.Second)
		waitEvent(t, c, r.JobIDRaw, record.JobEnd, 60*time.Second)
		sacctSecs[r.Account] += r.GPUSeconds()
	}
	if sacctSecs[a] == 0 || sacctSecs[b] == 0 {
		t.Fatalf("sacct charged %v, want both accounts (-A %s and %s)", sacctSecs, a, b)
	}
	l := newLedger(t, gpuacct, c, rows, nil, "sacct") // sacctmgr: the default, on PATH

	st, err := store.Open(context.Background(), store.Options{Path: l.db, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.SlurmAccounts(context.Background())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, s := range stored {
		if s.Cluster == "testcl" {
			parents[s.Account] = s.Parent
		}
	}
	for acct, want := range map[string]string{org: "root", a: org, b: org, "team-a": "root"} {
		if parents[acct] != want {
			t.Errorf("stored parent of %s: %q, want %q (stored: %v)", acct, parents[acct], want, stored)
		}
	}

	// The ledger's own GPU-seconds per account, to hold the tree to.
	ledgerSecs := map[string]int64{}
	for _, e := range l.export(t) {
		if e.JobID == ja || e.JobID == jb {
			ledgerSecs[e.Account] += e.AllocGPUS
		}
	}
	out, _ := l.run(t, "report", "tree", "-t", "seconds", "-P", "-n", "--teams", org, "--start", "now-1days", "--end", "now+1hours")
	var got []accountTreeRow
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 11 {
			t.Fatalf("report tree line %q: want 11 fields", line)
		}
		alloc, err1 := strconv.ParseInt(f[2], 10, 64)
		level, err2 := strconv.ParseInt(f[10], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("report tree line %q: %v %v", line, err1, err2)
		}
		got = append(got, accountTreeRow{team: f[0], user: f[1], parent: f[9], alloc: alloc, level: level})
	}
	want := []accountTreeRow{
		{team: org, alloc: ledgerSecs[a] + ledgerSecs[b], level: 1},
		{team: a, parent: org, alloc: ledgerSecs[a], level: 2},
		{team: a, user: user, parent: org, alloc: ledgerSecs[a], level: 2},
		{team: b, parent: org, alloc: ledgerSecs[b], level: 2},
		{team: b, user: user, parent: org, alloc: ledgerSecs[b], level: 2},
	}
	if ledgerSecs[b] > ledgerSecs[a] { // bigger first
		want[1], want[2], want[3], want[4] = want[3], want[4], want[1], want[2]
	}
	if len(got) != len(want) {
		t.Fatalf("report tree:\n%s\nwant %d rows: %+v", out, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v\n%s", i, got[i], want[i], out)
		}
	}
	for acct, gpus := range map[string]int64{a: 2, b: 1} {
		if d := ledgerSecs[acct] - sacctSecs[acct]; d < -gpus || d > gpus {
			t.Errorf("%s: ledger %d GPU-s, sacct %d: more than a second a GPU apart", acct, ledgerSecs[acct], sacctSecs[acct])
		}
	}
}
