package notecmd

import (
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestListClusters: with two clusters in the ledger, each with a note on
// its own node gpu01, note list shows the local cluster's (c1) by
// default, the one -M names, or both with a CLUSTER column; a bad -M is
// one line and exit 2.
func TestListClusters(t *testing.T) {
	f := newFixture(t)
	loc := f.db.Loc()
	ledgerdb.Exec(t, loc, `INSERT INTO nodes(cluster, name) VALUES ('c2', 'gpu01')`)
	until, created := now.Unix()+86400, now.Unix()-60
	ledgerdb.Exec(t, loc, `INSERT INTO notes(cluster, node, until, text, author, uid, created) VALUES
	 ('c1', 'gpu01', ?, 'c1 fan broken', 'alice', 1000, ?), ('c2', 'gpu01', ?, 'c2 booked', 'bob', 1001, ?)`, until, created, until, created)
	for _, tc := range []struct {
		name       string
		args       []string
		head       string
		has, lacks []string
	}{
		{"local by default", nil, "ID  NODE", []string{"c1 fan broken"}, []string{"c2 booked", "CLUSTER"}},
		{"one named", []string{"-M", "c2"}, "ID  NODE", []string{"c2 booked"}, []string{"c1 fan broken", "CLUSTER"}},
		{"all clusters", []string{"--all-clusters"}, "CLUSTER  ID", []string{"c1       1   gpu01", "c2       2   gpu01"}, nil},
		{"-M all", []string{"-M", "all"}, "CLUSTER  ID", []string{"c1 fan broken", "c2 booked"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := f.mustRun(t, 0, append([]string{"note", "list"}, tc.args...)...)
			if !strings.HasPrefix(out, tc.head) {
				t.Errorf("heading of\n%s\nis not %q", out, tc.head)
			}
			for _, s := range tc.has {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(out, s) {
					t.Errorf("output holds %q:\n%s", s, out)
				}
			}
		})
	}
	for _, tc := range []struct{ name, flag, err string }{
		{"unknown", "c3", `note list: --clusters: no cluster "c3" in `},
		{"empty", "", "note list: --clusters '': name a cluster (its clusters: c1, c2) or all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, 0, "note", "list", "-M", tc.flag)
			if code != 2 || !strings.Contains(errs, tc.err) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q (stdout %q)", code, errs, tc.err, out)
			}
		})
	}
}

// TestAddOtherCluster: a node the ledger has only on another cluster
// (here c2's gpu07, the head being c1) is refused before anything is
// filed: the note would be in force for c1, and no board cell show it.
func TestAddOtherCluster(t *testing.T) {
	f := newFixture(t)
	ledgerdb.Exec(t, f.db.Loc(), `INSERT INTO nodes(cluster, name) VALUES ('c2', 'gpu07')`)
	code, out, errs := f.run(t, 0, "note", "add", "gpu07", "--until", "4h", "--text", "booked")
	want := `note add: node gpu07 is on cluster c2, not on "c1", the note's (cluster.name): no board of "c1" shows it; set cluster.name to the agents' cluster`
	if code != 1 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit 1 saying %q", code, errs, out, want)
	}
	if strings.Contains(out, "note ") {
		t.Errorf("printed %q for a note no board shows", out)
	}
}
