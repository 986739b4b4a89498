package reportcmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReportTeamsBudget: with budgets, report teams has a BUDGET% column
// (golden files, testdata/budget/teams.*, -update): at 11 January vision
// has used 100 of its month's 300 GPU-hours, nlp 24 of its range's 20
// (its user bob's fiscal year is left out); without budgets the report
// keeps every byte (the other goldens and test/outputs). A budget the
// ledger cannot place is exit 2, naming it.
func TestReportTeamsBudget(t *testing.T) {
	now := time.Unix(t0+10*86400, 0)
	path := budgetLedger(t, now)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte("[store]\n"+storeKey(path)+budgetConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	window := []string{"--start", "2026-01-01", "--end", "2026-01-11", "--tz", "UTC"}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"teams.txt", nil},
		{"teams.csv", []string{"--format", "csv"}},
		{"teams.json", []string{"--format", "json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			if err := run(t, d, append(append([]string{"--config", cfg, "report", "teams"}, window...), tt.args...)...); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "budget", tt.name), out.String())
		})
	}
	t.Run("unknown account", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.toml")
		if err := os.WriteFile(bad, []byte("[store]\n"+storeKey(path)+"[[budget.entry]]\naccount = \"ghost\"\nperiod = \"month\"\namount = 5\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		d, _, _ := testDeps(now, nil)
		err := run(t, d, append([]string{"--config", bad, "report", "teams"}, window...)...)
		want := `report teams: budget.entry[0] (ghost): account "ghost" is unknown (neither in the ledger nor in the teams file)`
		if err == nil || err.Error() != want || exitCode(err) != 2 {
			t.Errorf("got %v (exit %d), want %q, exit 2", err, exitCode(err), want)
		}
	})
}
