package reportcmd

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// twoClusters is a ledger that clusters gpu1 and gpu2 share: job 7 and
// node n1 are on both, as Slurm's ids and host names are per cluster.
func twoClusters(t *testing.T, now time.Time) string {
	t.Helper()
	return buildLedger(t, []fxJob{
		{Cluster: "gpu1", ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 2, Start: t0, End: t0 + 3600},
		{Cluster: "gpu1", ID: 9, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0 + 600, End: t0 + 4200},
		{Cluster: "gpu2", ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 7200},
		{Cluster: "gpu2", ID: 8, User: "carol", Acct: "nlp", Part: "big", Node: "n3", GPUs: 4, Start: t0 + 3600, End: t0 + 5400},
	}, now)
}

// TestClusterScope: with two clusters in one ledger every command reads
// the local cluster, the ones -M names or all of them (with a cluster
// column), and an unmade choice, an unknown name or a job id on both is
// one line and exit 2. Golden files: testdata/clusters/NAME.txt (-update).
func TestClusterScope(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	loc := twoClusters(t, now)
	one := buildLedger(t, []fxJob{{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600}}, now)
	dir := t.TempDir()
	cfg := func(name, body string) string {
		p := filepath.Join(dir, name+".toml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local1 := cfg("local1", "[store]\n"+storeKey(loc)+"[cluster]\nname = \"gpu1\"\n")
	elsewhere := cfg("elsewhere", "[store]\n"+storeKey(loc)+"[cluster]\nname = \"gpu9\"\n")
	win := []string{"--start", "2026-01-01", "--end", "2026-01-02", "--tz", "UTC"}
	rep := func(kind string, extra ...string) []string {
		return append(append([]string{"report", kind, dbOpt(loc)}, win...), extra...)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"no-local", nil, rep("users")},
		{"local-env", map[string]string{"SLURM_CLUSTER_NAME": "gpu2"}, rep("users")},
		{"local-config", nil, append([]string{"--config", local1}, append([]string{"report", "users"}, win...)...)},
		{"local-not-in-ledger", nil, append([]string{"--config", elsewhere}, append([]string{"report", "users"}, win...)...)},
		{"env-over-config", map[string]string{"SLURM_CLUSTER_NAME": "gpu2"}, append([]string{"--config", local1}, append([]string{"report", "teams"}, win...)...)},
		{"M", nil, rep("users", "-M", "gpu2")},
		{"M-both", nil, rep("users", "-M", "gpu1,gpu2")},
		{"all-clusters", nil, rep("users", "--all-clusters")},
		{"M-all-tree", nil, rep("tree", "-M", "all")},
		{"all-teams-period", nil, rep("teams", "--all-clusters", "--period", "day")},
		{"all-top", nil, rep("top", "--all-clusters", "--limit", "2")},
		{"all-jobs", nil, rep("jobs", "--all-clusters")},
		{"all-json", nil, rep("partitions", "--all-clusters", "--format", "json")},
		{"unknown", nil, rep("users", "-M", "gpu3")},
		{"unknown-among", nil, rep("users", "--clusters", "gpu1", "--clusters", "gpu3")},
		{"names-and-all", nil, rep("users", "-M", "gpu1,all")},
		{"one-cluster-elsewhere", map[string]string{"SLURM_CLUSTER_NAME": "gpu9"}, append([]string{"report", "users", dbOpt(one)}, win...)},
		{"job-ambiguous", nil, []string{"job", "7", dbOpt(loc), "--tz", "UTC"}},
		{"job-all-ambiguous", map[string]string{"SLURM_CLUSTER_NAME": "gpu1"}, []string{"job", "7", dbOpt(loc), "--all-clusters"}},
		{"job-one-has-it", nil, []string{"job", "8", dbOpt(loc), "--json"}},
		{"job-M", nil, []string{"job", "7", dbOpt(loc), "-M", "gpu2", "--json"}},
		{"job-cluster-flag", nil, []string{"job", "7", dbOpt(loc), "--cluster", "gpu2", "--json"}},
		{"report-cluster-flag", nil, rep("users", "--cluster", "gpu2")},
		{"job-local", map[string]string{"SLURM_CLUSTER_NAME": "gpu1"}, []string{"job", "7", dbOpt(loc), "--json"}},
		{"job-local-lacks-it", map[string]string{"SLURM_CLUSTER_NAME": "gpu1"}, []string{"job", "8", dbOpt(loc)}},
		{"export-M", nil, append([]string{"export", "jobs", dbOpt(loc), "-M", "gpu2"}, win[:4]...)},
		{"export-all", nil, append([]string{"export", "gpus", dbOpt(loc), "--all-clusters"}, win[:4]...)},
		{"export-no-local", nil, append([]string{"export", "jobs", dbOpt(loc)}, win[:4]...)},
		{"nodes-M", nil, rep("nodes", "-M", "gpu2")},
		{"nodes-all", nil, rep("nodes", "--all-clusters")},
		{"nodes-M-named", nil, rep("nodes", "-M", "gpu2", "-N", "gpu2/n3")},
		{"nodes-outside-M", nil, rep("nodes", "-M", "gpu2", "-N", "gpu1/n2")},
		{"check-unknown", nil, []string{"check", dbOpt(loc), "--no-live", "-M", "gpu3"}},
		{"check-M", nil, []string{"check", dbOpt(loc), "--no-live", "-M", "gpu2", "--left-passes", "0"}},
		{"check-no-local", nil, []string{"check", dbOpt(loc), "--no-live", "--left-passes", "0"}},
		{"ignore-ambiguous", nil, []string{"ignore", "7", dbOpt(loc), "--reason", "test", "--requests", filepath.Join(dir, "req")}},
		{"ignore-list-no-local", nil, []string{"ignore", "--list", dbOpt(loc), "--requests", filepath.Join(dir, "req")}},
		{"plot-no-local", nil, []string{"plot", "--report", dbOpt(loc), "-o", filepath.Join(dir, "p.svg")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, tt.env)
			err := run(t, d, tt.args...)
			got := "exit " + fmt.Sprint(exitCode(err)) + "\n" + out.String()
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is more than one line: %q", err)
				}
				_, msg := cliwire.Code(err) // what the user reads
				got += "error: " + msg + "\n"
			}
			for _, l := range []string{loc, store.RedactURL(loc), one, store.RedactURL(one)} {
				got = strings.ReplaceAll(got, l, "LEDGER")
			}
			golden(t, filepath.Join("testdata", "clusters", tt.name+".txt"), got)
		})
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	code, _ := cliwire.Code(err)
	return code
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	cmdline.Golden(t, path, got, *update)
}

// TestClusterIgnore: ignore files its request under the cluster that has
// the job, so that the job of the same id on the other cluster stays
// counted; jobs of two clusters named at once make a request each.
func TestClusterIgnore(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	loc := twoClusters(t, now)
	reqs := t.TempDir()
	ignore := func(args ...string) string {
		t.Helper()
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, append(append([]string{"ignore"}, args...), dbOpt(loc), "--requests", reqs)...); err != nil {
			t.Fatalf("ignore %v: %v", args, err)
		}
		return out.String()
	}
	users := func() string {
		t.Helper()
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, "report", "users", dbOpt(loc), "--all-clusters", "--tz", "UTC", "--start", "2026-01-01", "--end", "2026-01-02", "--format", "csv"); err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
			f := strings.Split(l, ",")
			rows = append(rows, f[0]+" "+f[1]+" "+f[3])
		}
		return strings.Join(rows, "; ")
	}
	if got, want := users(), "gpu1 alice 2; gpu1 bob 1; gpu2 alice 2; gpu2 carol 2"; got != want {
		t.Fatalf("before: %s, want %s", got, want)
	}
	if out := ignore("7", "-M", "gpu2", "--reason", "benchmark"); !strings.Contains(out, "applied") {
		t.Fatalf("ignore 7 -M gpu2 said %q", out)
	}
	if got, want := users(), "gpu1 alice 2; gpu1 bob 1; gpu2 carol 2"; got != want {
		t.Errorf("after ignoring gpu2's job 7: %s, want %s", got, want)
	}
	if out := ignore("9", "8", "--reason", "test runs"); strings.Count(out, ": applied;") != 2 {
		t.Fatalf("ignore 9 8 said %q", out)
	}
	if got, want := users(), "gpu1 alice 2"; got != want {
		t.Errorf("after ignoring gpu1's 9 and gpu2's 8: %s, want %s", got, want)
	}
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, "ignore", "--list", dbOpt(loc), "--requests", reqs, "-M", "all", "--format", "csv"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		got = append(got, strings.Join(strings.Split(l, ",")[:3], " "))
	}
	if d := cmp.Diff([]string{"gpu2 8 carol", "gpu1 9 bob", "gpu2 7 alice"}, got); d != "" {
		t.Errorf("ignore --list -M all (-want +got):\n%s", d)
	}
}
