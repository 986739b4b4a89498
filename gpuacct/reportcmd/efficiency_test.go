package reportcmd

import (
	"path/filepath"
	"testing"
	"time"
)

// TestReportEfficiency: report efficiency sums the runs' CPU, memory and
// time figures per user, team or account (golden files,
// testdata/efficiency, -update): a run of a site without a gather plugin
// counts among the runs but adds no CPU or memory, and a group with no
// recorded figure reads "-", not 0.
func TestReportEfficiency(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := jobsLedger(t, now)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"users.txt", nil},
		{"teams.json", []string{"--by", "teams", "--format", "json"}},
		{"accounts.csv", []string{"--by", "accounts", "--format", "csv"}},
		{"me.txt", []string{"--users", "me"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			d.Caller = func() (string, error) { return "bob", nil }
			if err := run(t, d, append([]string{"report", "efficiency", dbOpt(path), "--tz", "UTC"}, tt.args...)...); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "efficiency", tt.name), out.String())
		})
	}
	t.Run("bad by", func(t *testing.T) {
		d, _, _ := testDeps(now, nil)
		err := run(t, d, "report", "efficiency", dbOpt(path), "--by", "nodes")
		if err == nil || err.Error() != `report efficiency: --by "nodes" is not users, teams, accounts` || exitCode(err) != 2 {
			t.Errorf("--by nodes: %v (exit %d), want one usage line, exit 2", err, exitCode(err))
		}
	})
}
