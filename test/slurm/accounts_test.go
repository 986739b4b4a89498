package slurm_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// accountTreeRow is one line of `gpuacct report tree -t seconds -P -n`:
// team|user|alloc_gpu_seconds|used|eff|idle|kwh|jobs|share|parent|level.
type accountTreeRow struct {
	team, user, parent string
	alloc, level       int64
}

// TestAccountTree: a parent account over two accounts in Slurm, a user
// charging both; one ingest pass (with sacctmgr) records the tree, and
// report tree -t seconds shows the parent with the sum of its children,
// each child with its user: the GPU-seconds the ledger holds for their
// jobs, sacct's gres/gpu × ElapsedRaw, and what sreport -t seconds cluster
// AccountUtilizationByUser prints for the same hours after a rollup. The
// accounts (accounttree-RUN, -a, -b) and user (accounttree) are this
// test's own; each run adds accounts of its own, so that sreport's hours
// hold its jobs alone, and deletes none.
func TestAccountTree(t *testing.T) {
	c := slurm.Get(t)
	const user = "accounttree"
	org := "accounttree-" + strconv.FormatInt(time.Now().UnixNano()/1e6%1e9, 36)
	a, b := org+"-a", org+"-b"
	slurm.EnsureUser(t, user)
	gpuacct := slurm.Binary(t, "gpuacct")
	c.Run(t, "", "sacctmgr", "-i", "add", "account", org, "Description=accounttree", "Organization=accounttree")
	c.Run(t, "", "sacctmgr", "-i", "add", "account", a+","+b, "parent="+org, "Description=accounttree", "Organization=accounttree")
	c.Run(t, "", "sacctmgr", "-i", "add", "user", user, "account="+a+","+b, "DefaultAccount="+a)
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
	first := time.Now()
	for _, r := range rows {
		if r.Start.Before(first) {
			first = r.Start
		}
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
	// Whole hours around the jobs, rolled up by slurmdbd now rather
	// than at the next hour.
	from := first.UTC().Truncate(time.Hour)
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	const ts = "2006-01-02T15:04:05"
	sreport := rolledUp(t, c, from, to, func(out string) bool { return strings.TrimSpace(out) != "" },
		"-n", "-P", "-t", "seconds", "-T", "gres/gpu", "cluster", "AccountUtilizationByUser",
		"accounts="+org, "start="+from.Local().Format(ts), "end="+to.Local().Format(ts), "format=Account,Login,Used")

	out, _ := l.run(t, "report", "tree", "-t", "seconds", "-P", "-n", "--teams", org,
		"--start", from.Local().Format(ts), "--end", to.Local().Format(ts))
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
	if diff := cmp.Diff(sacctSecs, ledgerSecs); diff != "" {
		t.Errorf("GPU-seconds per account (-sacct +ledger):\n%s", diff)
	}
	// sreport's lines, in its order: the parent, then each account and
	// its user; ours by size. Compared as account|login -> seconds.
	ours := map[string]string{}
	for _, r := range got {
		ours[r.team+"|"+r.user] = strconv.FormatInt(r.alloc, 10)
	}
	theirs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(sreport), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("sreport line %q: want 3 fields\n%s", line, sreport)
		}
		theirs[f[0]+"|"+f[1]] = f[2]
	}
	if diff := cmp.Diff(theirs, ours); diff != "" {
		t.Errorf("report tree -t seconds against sreport (-sreport +gpuacct):\n%s\nsreport:\n%s\ngpuacct:\n%s", diff, sreport, out)
	}
}
