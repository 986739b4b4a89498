package reportcmd

import (
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
)

// TestRefusals: input that used to give a wrong or silent answer is
// refused with one line that says what to change, and a usage exit.
func TestRefusals(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 60},
		{ID: 8, User: "albert", Acct: "nlp", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 60},
	}, now)
	tests := []struct {
		name     string
		args     []string
		want     string
		wantCode int
	}{
		{"negative limit", []string{"report", "users", dbOpt(path), "--limit", "-5"}, "report users: --limit -5 is not from 1 to 10000", 2},
		{"zero limit", []string{"report", "top", dbOpt(path), "--limit", "0"}, "report top: --limit 0 is not from 1 to 10000", 2},
		{"huge limit", []string{"report", "jobs", dbOpt(path), "--limit", "10001"}, "report jobs: --limit 10001 is not from 1 to 10000", 2},
		{"start far back", []string{"report", "users", dbOpt(path), "--start", "now-1000000weeks"}, `--start: time "now-1000000weeks" is more than 230 years from now`, 2},
		{"year 1", []string{"report", "users", dbOpt(path), "--start", "0001-01-01", "--end", "9999-12-31"}, "outside the years 1970 to 2199", 2},
		{"too many days", []string{"report", "users", dbOpt(path), "--start", "1980-01-01", "--end", "2100-01-01", "--period", "day"}, "is more than 1000 periods: shorten the window", 2},
		{"unknown user", []string{"report", "users", dbOpt(path), "--users", "alce"}, `report users: --users: no user "alce" in ` + path + `: did you mean alice?`, 2},
		{"unknown user among known", []string{"report", "jobs", dbOpt(path), "--users", "alice,bobby"}, `--users: no user "bobby"`, 2},
		{"unknown account", []string{"report", "teams", dbOpt(path), "--accounts", "visoin"}, `--accounts: no account "visoin" in ` + path + `: did you mean vision?`, 2},
		{"unknown partition", []string{"report", "teams", dbOpt(path), "--partitions", "cpu"}, `--partitions: no partition "cpu" in ` + path + `: did you mean gpu?`, 2},
		{"unknown model", []string{"report", "models", dbOpt(path), "--models", "A100"}, `--models: no model "A100"`, 2},
		{"unknown cluster", []string{"report", "teams", dbOpt(path), "--clusters", "c2"}, `report teams: --clusters: no cluster "c2" in ` + path + `: did you mean c1?`, 2},
		{"unknown cluster, none near", []string{"report", "teams", dbOpt(path), "-M", "elsewhere"}, `report teams: --clusters: no cluster "elsewhere" in ` + path + ` (its clusters: c1)`, 2},
		{"empty cluster", []string{"report", "teams", dbOpt(path), "-M", ""}, `report teams: --clusters '': name a cluster (its clusters: c1) or all`, 2},
		{"only commas", []string{"report", "users", dbOpt(path), "-M", ",,"}, `report users: --clusters '': name a cluster (its clusters: c1) or all`, 2},
		{"negative stale", []string{"check", dbOpt(path), "--stale", "-5m"}, "check: --stale -5m0s is not a positive duration", checkUnknown},
		{"zero lag", []string{"check", dbOpt(path), "--lag", "0s"}, "check: --lag 0s is not a positive duration", checkUnknown},
		{"negative forget", []string{"check", dbOpt(path), "--forget", "-1h"}, "check: --forget -1h0m0s is not a positive duration such as 168h, or 0", checkUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			err := run(t, d, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q (output %q)", err, tt.want, out.String())
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
			if code := exitCode(err); code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
		})
	}
	// The known values still answer.
	for _, args := range [][]string{
		{"report", "users", dbOpt(path), "--users", "alice", "--start", "2026-01-01", "--end", "2026-01-02", "--tz", "UTC", "-P", "-n"},
		{"report", "users", dbOpt(path), "--accounts", "VISION", "--start", "2026-01-01", "--end", "2026-01-02", "--tz", "UTC", "-P", "-n"},
	} {
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.HasPrefix(out.String(), "alice|") {
			t.Errorf("%v: %q", args, out.String())
		}
	}
}

// TestReportCaps: a report past the sums or rows it may hold is refused
// with what to narrow, not built.
func TestReportCaps(t *testing.T) {
	now := time.Unix(t0+5*86400, 0)
	var jobs []fxJob
	for i, u := range []string{"alice", "bob", "carol"} {
		for day := int64(0); day < 3; day++ {
			jobs = append(jobs, fxJob{ID: uint64(10*i) + uint64(day) + 1, User: u, Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1,
				Start: t0 + day*86400, End: t0 + day*86400 + 3600})
		}
	}
	path := buildLedger(t, jobs, now)
	args := []string{"report", "users", dbOpt(path), "--tz", "UTC", "--start", "2026-01-01", "--end", "2026-01-04", "--period", "day", "-P", "-n"}
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, args...); err != nil {
		t.Fatal(err)
	}
	// 3 days × 3 users: 9 sums, 9 rows (machine formats have no TOTAL).
	if n := strings.Count(out.String(), "\n"); n != 9 {
		t.Fatalf("%d rows:\n%s", n, out)
	}
	for _, tt := range []struct {
		name         string
		groups, rows int
		want         string
	}{
		{"sums", 8, report.MaxRows, "more than 8 sums (periods × rows): shorten the window"},
		{"rows", report.MaxGroups, 8, "more than 8 rows: shorten the window"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer report.SetCaps(tt.groups, tt.rows)()
			d, _, _ := testDeps(now, nil)
			err := run(t, d, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != 2 {
				t.Errorf("error %v, want %q and exit 2", err, tt.want)
			}
		})
	}
}
