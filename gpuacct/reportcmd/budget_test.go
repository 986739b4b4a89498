package reportcmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// budgetLedger: vision/alice runs 2 GPUs 10:00–15:00 UTC on 1–10 January
// 2026 (10 GPU-hours a day); nlp/bob 1 GPU all of 5 January.
func budgetLedger(t *testing.T, now time.Time) string {
	t.Helper()
	var jobs []fxJob
	for day := int64(0); day < 10; day++ {
		s := t0 + day*86400 + 10*3600
		jobs = append(jobs, fxJob{ID: uint64(100 + day), User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: s, End: s + 5*3600})
	}
	jobs = append(jobs, fxJob{ID: 200, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0 + 4*86400, End: t0 + 5*86400})
	return buildLedger(t, jobs, now)
}

const budgetConfig = `
[budget]
fiscal_start = 4

[[budget.entry]]
account = "vision"
period = "month"
amount = 300

[[budget.entry]]
account = "vision"
user = "alice"
period = "quarter"
amount = 1000

[[budget.entry]]
account = "nlp"
period = "range"
from = "2026-01-01"
to = "2026-01-15"
amount = 20

[[budget.entry]]
account = "nlp"
user = "bob"
period = "fiscal-year"
amount = 500
unit = "gpu-hours"
`

// TestReportBudget: report budget's burn-down per budget (golden files,
// testdata/budget, -update). At 11 January 00:00 UTC vision's month has
// 100 of 300 GPU-hours used at 10 a day: it runs out on 31 January;
// nlp's range ran out on 5 January; the fiscal year (from April) began
// in April 2025.
func TestReportBudget(t *testing.T) {
	now := time.Unix(t0+10*86400, 0)
	path := budgetLedger(t, now)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte("[store]\n"+storeKey(path)+budgetConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"all.txt", nil},
		{"all.csv", []string{"--format", "csv"}},
		{"all.json", []string{"--format", "json"}},
		{"vision-month.txt", []string{"--account", "VISION", "--period", "month"}},
		// in Tokyo January began 9 hours earlier: job 100's GPU-hours
		// count the same, and the days end at 15:00 UTC
		{"tokyo.txt", []string{"--tz", "Asia/Tokyo", "--at", "2026-01-11T09:00"}},
		// 1 February: a new month, nothing used in it yet
		{"february.txt", []string{"--at", "2026-02-01", "--account", "vision"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			if err := run(t, d, append([]string{"--config", cfg, "report", "budget", "--tz", "UTC"}, tt.args...)...); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "budget", tt.name), out.String())
		})
	}
}

// TestReportBudgetBadInput: a budget the ledger cannot place, or a bad
// flag, is one line naming it, exit 2.
func TestReportBudgetBadInput(t *testing.T) {
	now := time.Unix(t0+10*86400, 0)
	path := budgetLedger(t, now)
	dir := t.TempDir()
	for _, tt := range []struct {
		name, config string
		args         []string
		want         string
		code         int
	}{
		{"unknown account", "[[budget.entry]]\naccount = \"ghost\"\nperiod = \"month\"\namount = 5\n", nil,
			`report budget: budget.entry[0] (ghost): account "ghost" is unknown (neither in the ledger nor in the teams file)`, 2},
		{"overlap", "[[budget.entry]]\naccount = \"nlp\"\nperiod = \"month\"\namount = 5\n[[budget.entry]]\naccount = \"nlp\"\nperiod = \"quarter\"\namount = 5\n", nil,
			`report budget: budget.entry[1] (nlp): its period overlaps budget.entry[0]'s: one budget per account and user at a time`, 2},
		{"bad period flag", "", []string{"--period", "week"}, `report budget: --period "week" is not month, quarter, fiscal-year or range`, 2},
		{"bad at", "", []string{"--at", "2026-02-30"}, `report budget: --at: time "2026-02-30" is not a real date and time`, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(dir, tt.name+".toml")
			if err := os.WriteFile(cfg, []byte("[store]\n"+storeKey(path)+tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			d, _, _ := testDeps(now, nil)
			err := run(t, d, append([]string{"--config", cfg, "report", "budget"}, tt.args...)...)
			if err == nil || err.Error() != tt.want || exitCode(err) != tt.code {
				t.Errorf("got %v (exit %d), want %q, exit %d", err, exitCode(err), tt.want, tt.code)
			}
		})
	}
}
