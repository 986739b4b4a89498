package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
)

func TestParseAccountTree(t *testing.T) {
	tests := []struct {
		name  string
		out   string
		limit int
		want  []store.SlurmAccount
		err   string
	}{
		{"sreport's shape", strings.Join([]string{
			"testcl|root||",         // the top: not recorded
			"testcl|root|root|",     // a user's association
			"testcl|acme||root",     // under root
			"testcl|team-a||acme",   //
			"testcl|team-a|alice|",  // users are skipped
			"testcl|team-b||acme\r", // CRLF
			"testcl|physics||root",  //
		}, "\n"), 10, []store.SlurmAccount{
			{Cluster: "testcl", Account: "acme", Parent: "root"},
			{Cluster: "testcl", Account: "team-a", Parent: "acme"},
			{Cluster: "testcl", Account: "team-b", Parent: "acme"},
			{Cluster: "testcl", Account: "physics", Parent: "root"},
		}, ""},
		{"two clusters, a name on both", "gpu1|vision||root\ngpu2|vision||labs\ngpu2|labs||root\n", 10, []store.SlurmAccount{
			{Cluster: "gpu1", Account: "vision", Parent: "root"},
			{Cluster: "gpu2", Account: "vision", Parent: "labs"},
			{Cluster: "gpu2", Account: "labs", Parent: "root"},
		}, ""},
		{"odd lines", strings.Join([]string{
			"",                     // blank
			"garbage",              // one field
			"c|a|b",                // three
			"c|a||p|extra",         // five
			"|orphan||root",        // no cluster
			"c|||root",             // no account
			"C|Vision||Labs",       // case: as Slurm stores it
			"c|vision||labs",       // a repeat (a partition's association)
			" c | spaced || root ", //
			"c|self||self",         // its own parent: at the top
			"c|noparent||",         // no parent: at the top
		}, "\n"), 10, []store.SlurmAccount{
			{Cluster: "c", Account: "vision", Parent: "labs"},
			{Cluster: "c", Account: "spaced", Parent: "root"},
			{Cluster: "c", Account: "self", Parent: "root"},
			{Cluster: "c", Account: "noparent", Parent: "root"},
		}, ""},
		{"empty", "", 10, nil, ""},
		{"over the cap", "c|a||root\nc|b||root\nc|c||root\n", 2, nil, "sacctmgr listed more than 2 accounts: not recorded"},
		{"at the cap", "c|a||root\nc|b||root\nc|a|u|\n", 2, []store.SlurmAccount{
			{Cluster: "c", Account: "a", Parent: "root"}, {Cluster: "c", Account: "b", Parent: "root"},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAccountTree(tt.out, tt.limit)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("accounts (-want +got):\n%s", d)
			}
		})
	}
}

// TestPassRecordsAccountTree: each pass asks sacctmgr for the account tree
// within ingest.sacct_timeout and records it; sacctmgr failing or hanging
// leaves the tree last recorded and the pass goes on; a moved account is
// moved, an account Slurm no longer lists keeps its last parent.
func TestPassRecordsAccountTree(t *testing.T) {
	e := newEnv(t)
	e.cfg.Ingest.SacctTimeout = config.Duration{Duration: 200 * time.Millisecond}
	s := e.open(t)
	defer s.Close()
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	tree := "testcl|root||\ntestcl|acme||root\ntestcl|team-a||acme\ntestcl|team-a|alice|\ntestcl|team-b||acme\n"
	mode := ""
	calls := 0
	sacctmgr := func(ctx context.Context, args ...string) ([]byte, error) {
		joined := strings.Join(args, " ")
		if !strings.Contains(joined, "show associations") {
			return nil, nil // the cluster's facts: TestPassRecordsClusterFacts
		}
		calls++
		if joined != "-n -P show associations format=Cluster,Account,User,ParentName" {
			t.Errorf("sacctmgr args %q", args)
		}
		switch mode {
		case "fail":
			return nil, errors.New("slurmdbd unreachable")
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return []byte(tree), nil
	}
	pass := func() {
		t.Helper()
		in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), Sacctmgr: sacctmgr})
		if _, err := in.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		t.Helper()
		accts, err := s.SlurmAccounts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, a := range accts {
			fmt.Fprintf(&b, "%s/%s<%s ", a.Cluster, a.Account, a.Parent)
		}
		return b.String()
	}
	pass()
	want := "testcl/acme<root testcl/team-a<acme testcl/team-b<acme "
	if got := read(); got != want {
		t.Fatalf("after a pass: %q, want %q", got, want)
	}
	for _, m := range []string{"fail", "hang"} {
		mode = m
		pass()
		if got := read(); got != want {
			t.Errorf("sacctmgr %s: tree %q, want the last one %q", m, got, want)
		}
	}
	mode = ""
	tree = "testcl|acme||root\ntestcl|team-a||root\ntestcl|physics||root\n"
	pass()
	want = "testcl/acme<root testcl/physics<root testcl/team-a<root testcl/team-b<acme "
	if got := read(); got != want {
		t.Errorf("after a move: %q, want %q", got, want)
	}
	if calls != 4 {
		t.Errorf("sacctmgr asked %d times over 4 passes", calls)
	}
}
