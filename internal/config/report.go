package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Report configures gpuacct report, job, export, plot, check and ignore
// (docs/reports.md).
type Report struct {
	// Teams is the team mapping file (TOML: [teams.NAME] accounts, users);
	// empty means a team is the Slurm account.
	Teams string `toml:"teams"`
	// TZ is the zone that dates and periods are read in: an IANA name,
	// "UTC" or "Local".
	TZ string `toml:"tz"`
	// Format is the default output: table, csv, tsv or json.
	Format string `toml:"format"`
	// Units is the default for GPU-time columns: seconds, hours, minutes or
	// percent.
	Units string `toml:"units"`
	// IgnoreTag in a job's comment excludes it from totals.
	IgnoreTag string `toml:"ignore_tag"`
	// Requests is the spool directory of ignore/unignore requests that the
	// ingest service applies (owned by the service user).
	Requests string `toml:"requests"`
	// CheckStale is how long a node may ship nothing before gpuacct check
	// reports it.
	CheckStale Duration `toml:"check_stale"`
	// CheckLag is how old the last successful ingest pass may be.
	CheckLag Duration `toml:"check_lag"`
	// CheckForget stops checking nodes silent for longer than this
	// (decommissioned); 0 checks every node ever seen.
	CheckForget Duration `toml:"check_forget"`
	// CheckLeftPasses: a file in incoming older than the start of this
	// many ingest passes back is one ingest cannot retire; 0 skips.
	CheckLeftPasses int `toml:"check_left_passes"`
}

// DefaultRequests is report.requests' default: beside the default
// ledger on /data.
const DefaultRequests = "/data/gpusuite/requests"

// FollowLedger points the request directory beside the ledger when the
// ledger is a file other than the default one and report.requests was
// left at its default: "gpuacct note add --db /tmp/demo/gpuacct.db" files
// under /tmp/demo/requests, which the serve of that ledger reads, and
// never makes /data/gpusuite/requests. Commands call it once their
// options are applied.
func (c *Config) FollowLedger() {
	if c.Report.Requests != DefaultRequests || c.Store.URL != "" || c.Store.Path == "" || c.Store.Path == defaultStore().Path {
		return
	}
	c.Report.Requests = filepath.Join(filepath.Dir(c.Store.Path), "requests")
}

func defaultReport() Report {
	return Report{
		TZ:          "Local",
		Format:      "table",
		Units:       "hours",
		IgnoreTag:   "gpuacct:ignore",
		Requests:    DefaultRequests,
		CheckStale:  Dur(15 * time.Minute),
		CheckLag:    Dur(10 * time.Minute),
		CheckForget: Dur(7 * 24 * time.Hour),
		// Three passes: a file that arrived during one pass is taken by
		// the next; one still there after three is stuck.
		CheckLeftPasses: 3,
	}
}

func (r *Report) validate() error {
	if r.TZ != "Local" && r.TZ != "" {
		if _, err := time.LoadLocation(r.TZ); err != nil {
			return fmt.Errorf("key \"report.tz\": %q is not a time zone name such as UTC or Europe/Berlin", r.TZ)
		}
	}
	switch r.Format {
	case "table", "csv", "tsv", "json":
	default:
		return fmt.Errorf("key \"report.format\": %q is not table, csv, tsv or json", r.Format)
	}
	// As -t: any case (sreport's habit).
	r.Units = strings.ToLower(r.Units)
	switch r.Units {
	case "seconds", "hours", "minutes", "percent":
	default:
		return fmt.Errorf("key \"report.units\": %q is not seconds, hours, minutes or percent", r.Units)
	}
	if r.Teams != "" && !strings.HasPrefix(r.Teams, "/") {
		return fmt.Errorf("key \"report.teams\": %q is not an absolute path", r.Teams)
	}
	if !strings.HasPrefix(r.Requests, "/") {
		return fmt.Errorf("key \"report.requests\": %q is not an absolute path", r.Requests)
	}
	if r.CheckStale.Duration <= 0 || r.CheckLag.Duration <= 0 {
		return fmt.Errorf("key \"report.check_stale\" and \"report.check_lag\": must be positive")
	}
	if r.CheckLeftPasses < 0 || r.CheckLeftPasses > 1000 {
		return fmt.Errorf("key \"report.check_left_passes\": %d is outside 0..1000", r.CheckLeftPasses)
	}
	if r.CheckForget.Duration < 0 {
		return fmt.Errorf("key \"report.check_forget\": must not be negative; use 0 to check every node")
	}
	return nil
}
