package reportcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// orgLedger is clusters' twoClusters-free twin for sreport's habits: on
// cluster c1, acme is the parent account of vision and nlp, physics is at
// the top; alice charges two accounts.
func orgLedger(t *testing.T, now time.Time) string {
	t.Helper()
	loc := buildLedger(t, []fxJob{
		{ID: 1, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 4, Start: t0, End: t0 + 1001},
		{ID: 2, User: "bob", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0 + 7, End: t0 + 1800},
		{ID: 3, User: "alice", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 3, Start: t0 + 60, End: t0 + 3599},
		{ID: 4, User: "zoe", Acct: "physics", Part: "gpu", Node: "n2", GPUs: 1, Start: t0 + 1, End: t0 + 2},
	}, now)
	st, err := store.Open(context.Background(), store.At(loc))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetSlurmAccounts([]store.SlurmAccount{{Cluster: "c1", Account: "acme", Parent: "root"},
		{Cluster: "c1", Account: "vision", Parent: "acme"}, {Cluster: "c1", Account: "nlp", Parent: "acme"},
		{Cluster: "c1", Account: "physics", Parent: "root"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestSreportHabits: report takes sreport's -t seconds (whole
// GPU-seconds), -P, -n and --level, and refuses a bad -t or --level
// with one line and exit 2. Golden files: testdata/habits/NAME.txt
// (-update).
func TestSreportHabits(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	loc := orgLedger(t, now)
	dir := t.TempDir()
	file := filepath.Join(dir, "teams.toml")
	if err := os.WriteFile(file, []byte("[teams.acme]\n[teams.cv]\naccounts=[\"vision\"]\nparent=\"acme\"\n[teams.lang]\naccounts=[\"nlp\"]\nparent=\"acme\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cycle := filepath.Join(dir, "cycle.toml")
	if err := os.WriteFile(cycle, []byte("[teams.a]\nparent=\"b\"\n[teams.b]\nparent=\"a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	win := []string{"--start", "2026-01-01", "--end", "2026-01-02", "--tz", "UTC"}
	rep := func(kind string, extra ...string) []string {
		return append(append([]string{"report", kind, dbOpt(loc)}, win...), extra...)
	}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"tree-seconds", rep("tree", "-t", "seconds"), 0},
		{"tree-P-seconds", rep("tree", "-t", "Seconds", "-P"), 0},
		{"tree-P-n-seconds", rep("tree", "-t", "seconds", "-P", "-n"), 0},
		{"tree-level1", rep("tree", "--level", "1", "-t", "seconds"), 0},
		{"teams-level1-csv", rep("teams", "--level", "1", "-t", "seconds", "--format", "csv"), 0},
		{"top-teams-level1", rep("top", "--by", "teams", "--level", "1"), 0},
		{"tree-teams-org", rep("tree", "--teams", "acme", "-t", "seconds"), 0},
		{"tree-file", rep("tree", "--teams-file", file, "-t", "seconds"), 0},
		{"users-seconds-json", rep("users", "-t", "seconds", "--format", "json"), 0},
		{"units-lightyears", rep("tree", "-t", "lightyears"), 2},
		{"format-xml", rep("tree", "--format", "xml"), 2},
		{"level-0", rep("tree", "--level", "0"), 2},
		{"level-x", rep("tree", "--level", "x"), 2},
		{"level-users", rep("users", "--level", "1"), 2},
		{"level-top-users", rep("top", "--level", "1"), 2},
		{"level-jobs", rep("jobs", "--level", "1"), 2},
		{"level-deep", rep("teams", "--level", "40"), 2},
		{"teams-unknown", rep("tree", "--teams", "acm"), 2},
		{"file-cycle", rep("tree", "--teams-file", cycle), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			err := run(t, d, tt.args...)
			if code := exitCode(err); code != tt.code {
				t.Errorf("exit %d, want %d (%v)", code, tt.code, err)
			}
			got := "exit " + fmt.Sprint(exitCode(err)) + "\n" + out.String()
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is more than one line: %q", err)
				}
				got += "error: " + err.Error() + "\n"
			}
			for _, l := range []string{loc, store.RedactURL(loc), dir} {
				got = strings.ReplaceAll(got, l, "DIR")
			}
			golden(t, filepath.Join("testdata", "habits", tt.name+".txt"), got)
		})
	}
}
