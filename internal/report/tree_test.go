package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// setAccounts records Slurm's account tree in the ledger at loc, as
// ingest's fillAccounts does.
func setAccounts(t *testing.T, loc string, accts []store.SlurmAccount) {
	t.Helper()
	st, err := store.Open(context.Background(), store.At(loc))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), time.Unix(t0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetSlurmAccounts(accts); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// treeLedger: acme over vision and nlp (nlp also has a sub-account,
// nlp-x), physics at the top; alice charges vision and nlp-x, root's job
// has no account tree entry (lab), so it is at the top.
func treeLedger(t *testing.T) (*Ledger, timespec.Window) {
	now := time.Unix(t0+86400, 0)
	loc := buildLedger(t, []fxJob{
		{ID: 1, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 4, Start: t0, End: t0 + 3600},
		{ID: 2, User: "bob", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 1800},
		{ID: 3, User: "carol", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 2, Start: t0, End: t0 + 3600},
		{ID: 4, User: "alice", Acct: "nlp-x", Part: "gpu", Node: "n2", GPUs: 1, Start: t0 + 600, End: t0 + 1200},
		{ID: 5, User: "zoe", Acct: "physics", Part: "gpu", Node: "n3", GPUs: 3, Start: t0, End: t0 + 7200},
		{ID: 6, User: "root", Acct: "lab", Part: "gpu", Node: "n3", GPUs: 1, Start: t0, End: t0 + 60},
	}, now)
	setAccounts(t, loc, []store.SlurmAccount{
		{Cluster: "c1", Account: "acme", Parent: "root"},
		{Cluster: "c1", Account: "vision", Parent: "acme"},
		{Cluster: "c1", Account: "nlp", Parent: "acme"},
		{Cluster: "c1", Account: "nlp-x", Parent: "nlp"},
		{Cluster: "c1", Account: "physics", Parent: "root"},
		// Another cluster's tree does not place c1's accounts.
		{Cluster: "c2", Account: "physics", Parent: "acme"},
	})
	return openTest(t, loc), timespec.Window{Start: time.Unix(t0, 0).UTC(), End: time.Unix(t0+86400, 0).UTC()}
}

const treeFile = `
[teams.acme]

[teams.cv]
accounts = ["vision"]
parent = "acme"

[teams.lang]
accounts = ["nlp", "nlp-x"]
parent = "acme"

[teams.science]
accounts = ["physics"]
`

// TestTreeGolden: the tree from Slurm's account tree and from a mapping
// file, whole and rolled up, in the terminal and in -P seconds.
// Golden files: testdata/tree/NAME (-update).
func TestTreeGolden(t *testing.T) {
	db, w := treeLedger(t)
	file, err := teams.Parse([]byte(treeFile))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		r    Request
		o    table.Options
	}{
		{"slurm.txt", Request{Kind: "tree"}, table.Options{}},
		{"slurm-seconds.psv", Request{Kind: "tree"}, table.Options{Format: table.Parsable, Units: table.Seconds}},
		{"slurm-level1.txt", Request{Kind: "tree", Level: 1}, table.Options{}},
		{"slurm-level2-seconds.txt", Request{Kind: "tree", Level: 2}, table.Options{Units: table.Seconds}},
		{"slurm-teams-level1.txt", Request{Kind: "teams", Level: 1}, table.Options{Units: table.Seconds}},
		{"slurm-teams-acme.txt", Request{Kind: "tree", Teams: []string{"acme"}}, table.Options{Units: table.Seconds}},
		{"file.txt", Request{Kind: "tree", Mapping: file}, table.Options{Units: table.Seconds}},
		{"file.json", Request{Kind: "tree", Mapping: file}, table.Options{Format: table.JSON, Units: table.Seconds}},
		{"file-top-level1.txt", Request{Kind: "top", TopBy: "teams", Mapping: file, Level: 1}, table.Options{Units: table.Seconds}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.Window = w
			tb, err := db.Report(context.Background(), tt.r)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := table.Write(&b, tb, tt.o); err != nil {
				t.Fatal(err)
			}
			goldenFile(t, filepath.Join("testdata", "tree", tt.name), b.String())
		})
	}
}

func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// treeRow is a tree report row read back by its column keys.
type treeRow struct {
	period, team, user, parent string
	level                      int64
	alloc                      int64
	child, footer              bool
}

func readTree(t *testing.T, tb *table.Table) []treeRow {
	t.Helper()
	col := map[string]int{}
	for i, c := range tb.Columns {
		col[c.Key] = i
	}
	str := func(v any) string {
		s, _ := v.(string)
		return s
	}
	var out []treeRow
	for _, r := range tb.Rows {
		x := treeRow{team: str(r.Cells[col["team"]]), user: str(r.Cells[col["user"]]), parent: str(r.Cells[col["parent"]]),
			alloc: r.Cells[col["alloc_gpu"]].(int64), child: r.Child, footer: r.Footer}
		if i, ok := col["period"]; ok {
			x.period = str(r.Cells[i])
		}
		if l, ok := r.Cells[col["level"]].(int64); ok {
			x.level = l
		}
		out = append(out, x)
	}
	return out
}

// checkTreeSums: every organisation's or team's row is the sum of its own
// users' rows and of the rows of the nodes under it; TOTAL is the sum of
// the top rows and of every user row (the leaves); no row is deeper than
// level.
func checkTreeSums(t *testing.T, rows []treeRow, level int) (total map[string]int64) {
	t.Helper()
	type nodeKey struct{ period, name string }
	node := map[nodeKey]int64{}
	under := map[nodeKey]int64{}
	leaves, tops, footer := map[string]int64{}, map[string]int64{}, map[string]int64{}
	users := map[nodeKey]bool{}
	for _, r := range rows {
		switch {
		case r.footer:
			footer[r.period] += r.alloc
		case r.child:
			k := nodeKey{r.period, r.team + "\x00" + r.user}
			if users[k] {
				t.Errorf("%s: user %q is shown twice under %q", r.period, r.user, r.team)
			}
			users[k] = true
			under[nodeKey{r.period, r.team}] += r.alloc
			leaves[r.period] += r.alloc
		default:
			if _, dup := node[nodeKey{r.period, r.team}]; dup {
				t.Errorf("%s: %q is shown twice", r.period, r.team)
			}
			node[nodeKey{r.period, r.team}] = r.alloc
			if r.parent != "" {
				under[nodeKey{r.period, r.parent}] += r.alloc
			}
			if r.level == 1 {
				tops[r.period] += r.alloc
				if r.parent != "" {
					t.Errorf("%s: top row %q has parent %q", r.period, r.team, r.parent)
				}
			}
			if level > 0 && r.level > int64(level) {
				t.Errorf("%s: %q at level %d, rolled up to %d", r.period, r.team, r.level, level)
			}
		}
	}
	if diff := cmp.Diff(node, under); diff != "" {
		t.Errorf("node rows (-shown +sum of their users and children):\n%s", diff)
	}
	if diff := cmp.Diff(footer, tops); diff != "" {
		t.Errorf("TOTAL (-shown +sum of the top rows):\n%s", diff)
	}
	if diff := cmp.Diff(footer, leaves); diff != "" {
		t.Errorf("TOTAL (-shown +sum of the user rows):\n%s", diff)
	}
	return footer
}

// TestTreeSumsRandom: over random jobs, a random account tree of up to
// six levels, every period and zone and every roll-up level, the tree's
// subtotals are the sums of their children at every level, and its TOTAL
// is Σ GPUs × elapsed of the jobs clipped to the period.
func TestTreeSumsRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	horizon := int64(40 * 86400)
	now := time.Unix(t0+horizon, 0)
	accts := make([]string, 12)
	var tree []store.SlurmAccount
	for i := range accts {
		accts[i] = fmt.Sprintf("a%d", i)
		// A parent among the earlier accounts: a tree, depth up to 12.
		parent := "root"
		if i > 0 && rng.Intn(4) > 0 {
			parent = accts[rng.Intn(i)]
		}
		tree = append(tree, store.SlurmAccount{Cluster: "c1", Account: accts[i], Parent: parent})
	}
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	var jobs []fxJob
	for id := uint64(1); id <= 300; id++ {
		s := t0 + rng.Int63n(horizon-86400)
		e := s + 60 + rng.Int63n(3*86400)
		if rng.Intn(40) == 0 {
			e = 0 // still running
		}
		jobs = append(jobs, fxJob{ID: id, User: users[rng.Intn(len(users))], Acct: accts[rng.Intn(len(accts))], Part: "gpu",
			Node: fmt.Sprintf("n%d", 1+rng.Intn(3)), GPUs: 1 + rng.Intn(8), Start: s, End: e})
	}
	loc := buildLedger(t, jobs, now)
	setAccounts(t, loc, tree)
	db := openTest(t, loc)
	for _, zone := range []string{"UTC", "Asia/Tokyo"} {
		tz, _ := time.LoadLocation(zone)
		w := HourWindow(timespec.Window{Start: time.Unix(t0, 0).In(tz), End: now.In(tz)})
		for _, p := range []timespec.Period{timespec.None, timespec.Week} {
			bs := timespec.Buckets(w, p)
			want := map[string]int64{}
			for _, j := range jobs {
				end := j.End
				if end == 0 {
					end = now.Unix()
				}
				for i, s := range timespec.Split(j.Start, end, bs) {
					if s > 0 {
						label := bs[i].Label
						if p == timespec.None {
							label = ""
						}
						want[label] += int64(j.GPUs) * s
					}
				}
			}
			for _, level := range []int{0, 1, 2, 3, 6} {
				t.Run(fmt.Sprintf("%s/%s/level%d", zone, p, level), func(t *testing.T) {
					tb, err := db.Report(context.Background(), Request{Kind: "tree", Window: w, Period: p, Level: level})
					if err != nil {
						t.Fatal(err)
					}
					got := checkTreeSums(t, readTree(t, tb), level)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("TOTAL per period (-Σ GPUs×elapsed +report):\n%s", diff)
					}
				})
			}
		}
	}
}

// TestTreeFileDepth: a mapping file's organisations nest at any depth;
// each level's rows sum the one below.
func TestTreeFileDepth(t *testing.T) {
	db, w := treeLedger(t)
	m, err := teams.Parse([]byte(`
[teams.world]
[teams.europe]
parent = "world"
[teams.acme]
parent = "europe"
[teams.cv]
accounts = ["vision"]
parent = "acme"
[teams.lang]
accounts = ["nlp"]
users = ["zoe"]
parent = "world"
`))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.Report(context.Background(), Request{Kind: "tree", Window: w, Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	rows := readTree(t, tb)
	checkTreeSums(t, rows, 0)
	levels := map[string]int64{}
	for _, r := range rows {
		if !r.child && !r.footer {
			levels[r.team] = r.level
		}
	}
	want := map[string]int64{"world": 1, "europe": 2, "acme": 3, "cv": 4, "lang": 2, teams.Unassigned: 1}
	if diff := cmp.Diff(want, levels); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
}

// TestTeamsFilterOrganisation: --teams naming an organisation takes
// every team under it, in a tree and in the teams report alike.
func TestTeamsFilterOrganisation(t *testing.T) {
	db, w := treeLedger(t)
	for _, kind := range []string{"teams", "tree"} {
		tb, err := db.Report(context.Background(), Request{Kind: kind, Window: w, Teams: []string{"nlp"}})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range tb.Rows {
			if !r.Footer && !r.Child {
				names = append(names, r.Cells[0].(string))
			}
		}
		want := map[string][]string{"teams": {"nlp", "nlp-x"}, "tree": {"acme", "nlp", "nlp-x"}}[kind]
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("%s --teams nlp (-want +got):\n%s", kind, diff)
		}
	}
	_, err := db.Report(context.Background(), Request{Kind: "tree", Window: w, Teams: []string{"acm"}})
	if !IsBadInput(err) || !strings.Contains(err.Error(), `unknown team "acm"`) {
		t.Errorf("unknown organisation: %v", err)
	}
}

func TestLevelRefused(t *testing.T) {
	db, w := treeLedger(t)
	tests := []struct {
		r    Request
		want string
	}{
		{Request{Kind: "tree", Level: -1}, "--level -1: levels count from 1 (the top organisations)"},
		{Request{Kind: "users", Level: 1}, "--level rolls teams up to their organisations: use it with report teams, tree or top --by teams"},
		{Request{Kind: "top", TopBy: "users", Level: 2}, "--level rolls teams up"},
		{Request{Kind: "teams", Level: 33}, "--level 33: trees are at most 32 levels deep"},
	}
	for _, tt := range tests {
		tt.r.Window = w
		_, err := db.Report(context.Background(), tt.r)
		var bad *BadInput
		if !errors.As(err, &bad) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.r, err, tt.want)
		}
	}
}

// TestPathCut: a cycle or a chain past MaxDepth in a recorded tree (the
// mapping file refuses both, Slurm should never hold either) is cut, not
// followed forever.
func TestPathCut(t *testing.T) {
	h := &Hierarchy{mapping: &teams.Mapping{}, paths: map[treeKey][]string{}, slurm: map[string]map[string]string{
		"c1": {"a": "b", "b": "c", "c": "a", "x": ""},
	}}
	if diff := cmp.Diff([]string{"c", "b", "a"}, h.Path("c1", "a")); diff != "" {
		t.Errorf("cycle (-want +got):\n%s", diff)
	}
	deep := map[string]string{}
	for i := range 100 {
		deep[fmt.Sprint(i)] = fmt.Sprint(i + 1)
	}
	h.slurm["c2"] = deep
	if n := len(h.Path("c2", "0")); n != teams.MaxDepth {
		t.Errorf("deep chain: path of %d, want %d", n, teams.MaxDepth)
	}
	if got := h.At("c1", "x", 1); got != "x" {
		t.Errorf("At top: %q", got)
	}
}

// TestJobsTeamsOrganisation: report jobs --teams takes an organisation
// as the other reports do, from Slurm's account tree or the mapping
// file's parents, and lists the jobs of every team under it.
func TestJobsTeamsOrganisation(t *testing.T) {
	db, w := treeLedger(t)
	file, err := teams.Parse([]byte(treeFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		m     *teams.Mapping
		teams []string
		want  []int64
	}{
		{"slurm's parent account", nil, []string{"acme"}, []int64{1, 2, 3, 4}},
		{"slurm's middle account", nil, []string{"nlp"}, []int64{3, 4}},
		{"a team", nil, []string{"physics"}, []int64{5}},
		{"the mapping file's organisation", file, []string{"acme"}, []int64{1, 2, 3, 4}},
		{"the mapping file's team", file, []string{"lang"}, []int64{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			err := db.Jobs(context.Background(), JobsQuery{Window: w, Teams: tc.teams, Mapping: tc.m, Sort: "start"}, func(j *JobRow) bool {
				got = append(got, j.JobID)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobs --teams %v (-want +got):\n%s", tc.teams, diff)
			}
			tb, err := db.JobList(context.Background(), JobsQuery{Window: w, Teams: tc.teams, Mapping: tc.m, Sort: "start", Limit: 50})
			if err != nil {
				t.Fatalf("JobList: %v", err)
			}
			if len(tb.Rows) != len(tc.want) {
				t.Errorf("JobList --teams %v: %d rows, want %d", tc.teams, len(tb.Rows), len(tc.want))
			}
		})
	}
}
