package config

import (
	"strings"
	"testing"
)

func TestReportSection(t *testing.T) {
	tests := []struct{ toml, want string }{
		{"[report]\ntz = \"Asia/Tokyo\"\nunits = \"minutes\"\n", ""},
		{"[report]\ntz = \"Mars/Base\"\n", `key "report.tz": "Mars/Base" is not a time zone name`},
		{"[report]\nformat = \"xml\"\n", `key "report.format": "xml" is not table, csv, tsv or json`},
		{"[report]\nunits = \"days\"\n", `key "report.units": "days" is not seconds, hours, minutes or percent`},
		{"[report]\nunits = \"seconds\"\n", ""},
		{"[report]\nunits = \"Hours\"\n", ""},
		{"[report]\nteams = \"teams.toml\"\n", `key "report.teams": "teams.toml" is not an absolute path`},
		{"[report]\nrequests = \"spool\"\n", `key "report.requests"`},
		{"[report]\ncheck_stale = \"0s\"\n", "must be positive"},
		{"[report]\ncheck_forget = \"-1h\"\n", `key "report.check_forget"`},
		{"[report]\nteam_file = \"/x\"\n", `unknown key "report.team_file"`},
		{"[report]\ncheck_left_passes = 5\n", ""},
		{"[report]\ncheck_left_passes = -1\n", `key "report.check_left_passes": -1 is outside 0..1000`},
	}
	for _, tt := range tests {
		cfg := Default()
		err := Parse([]byte(tt.toml), &cfg)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.toml, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.toml, err, tt.want)
		}
	}
	if d := Default().Report; d.TZ != "Local" || d.Format != "table" || d.IgnoreTag != "gpuacct:ignore" || d.CheckStale.Duration <= 0 || d.CheckLeftPasses != 3 {
		t.Errorf("defaults %+v", d)
	}
}

func TestFollowLedger(t *testing.T) {
	for _, tc := range []struct {
		name, path, url, requests, want string
	}{
		{"default ledger", "/data/gpusuite/gpuacct.db", "", DefaultRequests, DefaultRequests},
		{"ledger elsewhere", "/tmp/demo/gpuacct.db", "", DefaultRequests, "/tmp/demo/requests"},
		{"requests set", "/tmp/demo/gpuacct.db", "", "/srv/reqs", "/srv/reqs"},
		{"postgres", "/tmp/demo/gpuacct.db", "postgres://db/x", DefaultRequests, DefaultRequests},
		{"requests off", "/tmp/demo/gpuacct.db", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Store.Path, c.Store.URL, c.Report.Requests = tc.path, tc.url, tc.requests
			c.FollowLedger()
			if c.Report.Requests != tc.want {
				t.Errorf("requests %q, want %q", c.Report.Requests, tc.want)
			}
		})
	}
}
