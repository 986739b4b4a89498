package reportcmd

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// run runs one gpuacct command line against the report commands.
func run(t testing.TB, d Deps, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, ExitErrHandler: func(*cli.Context, error) {},
		Writer: d.Stdout, ErrWriter: d.Stderr,
		Commands: []*cli.Command{ReportCommand(d), JobCommand(d), JobsCommand(d), CheckCommand(d), IgnoreCommand(d), UnignoreCommand(d), ExportCommand(d), PlotCommand(d)}}
	cliwire.ConfigDefaults(app)                                                // as the binary's cliwire.Prepare does
	return app.Run(cliwire.Reorder(app, append([]string{"gpuacct"}, args...))) // as cliwire.Run does
}

func TestBadInput(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 60}}, now)
	dir := t.TempDir()
	twoTeams := filepath.Join(dir, "teams.toml")
	os.WriteFile(twoTeams, []byte("[teams.a]\nusers=[\"alice\"]\n[teams.b]\nusers=[\"alice\"]\n"), 0o644)
	notDB := filepath.Join(dir, "not.db")
	os.WriteFile(notDB, []byte("hello, this is not sqlite at all, not even close to it........................................"), 0o644)
	cfg := filepath.Join(dir, "gpusuite.toml")
	os.WriteFile(cfg, []byte("[store]\n"+storeKey(path)), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown sub-report", []string{"report", "bogus"}, `report: unknown report "bogus": use one of teams, users`},
		{"no sub-report", []string{"report"}, "report: name a report"},
		{"report with an argument", []string{"report", "teams", dbOpt(path), "x"}, `report teams: unexpected argument "x" (options go with --)`},
		{"cluster with an argument", []string{"report", "cluster", dbOpt(path), "x"}, `report cluster: unexpected argument "x" (options go with --)`},
		{"efficiency with an argument", []string{"report", "efficiency", dbOpt(path), "x"}, `report efficiency: unexpected argument "x" (options go with --)`},
		{"budget with an argument", []string{"report", "budget", dbOpt(path), "x"}, `report budget: unexpected argument "x" (options go with --)`},
		{"bad date", []string{"report", "teams", dbOpt(path), "--start", "2026-02-30"}, `report teams: --start: time "2026-02-30" is not a real date and time`},
		{"bad date format", []string{"report", "teams", dbOpt(path), "--start", "next week"}, `report teams: --start: time "next week" is not one of YYYY-MM-DD`},
		{"end before start", []string{"report", "users", dbOpt(path), "--start", "2026-01-05", "--end", "2026-01-01"}, "report users: --end 2026-01-01T00:00:00 is not after --start 2026-01-05T00:00:00"},
		{"unknown team", []string{"report", "teams", dbOpt(path), "--teams", "nope"}, `report teams: --teams: unknown team "nope" (teams: (unassigned), vision)`},
		{"unknown node", []string{"report", "nodes", dbOpt(path), "--nodes", "gpu99"}, `report nodes: --nodes: unknown node "gpu99"`},
		{"missing db", []string{"report", "teams", "--db", filepath.Join(dir, "absent.db")}, "accounting database " + filepath.Join(dir, "absent.db") + " does not exist"},
		{"not a db", []string{"report", "teams", "--db", notDB}, "not a gpusuite accounting database"},
		{"user in two teams", []string{"report", "teams", dbOpt(path), "--teams-file", twoTeams}, `team mapping ` + twoTeams + `: user "alice" is in two teams, "a" and "b"`},
		{"bad period", []string{"report", "teams", dbOpt(path), "--period", "year"}, `report teams: --period "year" is not day, week or month`},
		{"bad format", []string{"report", "teams", dbOpt(path), "--format", "xml"}, `--format "xml" is not table, csv, tsv or json`},
		{"bad units", []string{"report", "teams", dbOpt(path), "--units", "days"}, `--units "days" is not seconds, minutes, hours or percent`},
		{"bad tz", []string{"report", "teams", dbOpt(path), "--tz", "Mars/Base"}, `--tz "Mars/Base" is not a time zone name`},
		{"bad top by", []string{"report", "top", dbOpt(path), "--by", "nodes"}, `report top: --by "nodes" is not users or teams`},
		{"bad sort", []string{"report", "jobs", dbOpt(path), "--sort", "size"}, `report jobs: --sort "size" is not start, alloc, eff or idle`},
		{"job not found", []string{"job", dbOpt(path), "99"}, "job 99: job not found in " + store.RedactURL(path)},
		{"bad job id", []string{"job", dbOpt(path), "abc"}, `job "abc" is not a Slurm job id`},
		{"job without id", []string{"job", dbOpt(path)}, "job: give one JOBID"},
		{"job with two ids", []string{"job", dbOpt(path), "7", "8"}, "job: give one JOBID (see 'gpuacct job --help')"},
		{"plot without id", []string{"plot", dbOpt(path), "-o", filepath.Join(dir, "p.png")}, "plot: give one JOBID, or --report (see 'gpuacct plot --help')"},
		{"plot bad job id", []string{"plot", dbOpt(path), "-o", filepath.Join(dir, "p.png"), "abc"}, `job "abc" is not a Slurm job id`},
		{"ignore without reason", []string{"ignore", dbOpt(path), "7"}, "ignore: --reason is required"},
		{"ignore unknown job", []string{"ignore", dbOpt(path), "--requests", dir, "--reason", "x", "8"}, "ignore: job 8: job not found"},
		{"config file db", []string{"--config", cfg, "report", "teams", "--teams", "nope"}, `unknown team "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := testDeps(now, nil)
			err := run(t, d, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestSQLiteLockedDB(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, "gpuacct.db")
	st, err := store.Open(context.Background(), store.Options{Path: path, Journal: store.JournalDelete})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A writer in rollback-journal mode (the NFS case) holding an
	// exclusive lock longer than the reader's busy timeout.
	cfg := filepath.Join(dir, "gpusuite.toml")
	os.WriteFile(cfg, []byte("[store]\npath = \""+path+"\"\nbusy_timeout = \"100ms\"\n"), 0o644)
	d, _, _ := testDeps(now, nil)
	ledgerdb.Tx(t, path, func(exec func(string, ...any)) {
		exec(`INSERT INTO meta(key, value) VALUES('x', 'y')`)
		exec(`PRAGMA locking_mode`)
		// Force the exclusive lock by spilling to the file.
		exec(`CREATE TABLE big AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 200000) SELECT x, randomblob(100) FROM c`)
		err := run(t, d, "--config", cfg, "report", "teams")
		if err == nil || !strings.Contains(err.Error(), "database is locked") {
			t.Fatalf("error %v, want a locked database", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("more than one line: %q", err)
		}
	})
}

// CSV and JSON of a report read back to the same figures.
func TestReportRoundTrip(t *testing.T) {
	now := time.Unix(t0+10*86400, 0)
	rng := rand.New(rand.NewSource(3))
	jobs := randomJobs(rng, 60, 9*86400)
	path := buildLedger(t, jobs, now)
	var wantAlloc int64
	for _, j := range jobs {
		end := j.End
		if end == 0 {
			end = now.Unix()
		}
		wantAlloc += int64(j.GPUs) * (end - j.Start)
	}
	args := []string{"report", "users", dbOpt(path), "--tz", "UTC", "--start", "2025-12-01", "--end", "2026-02-01"}
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, append(args, "--format", "csv")...); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"user", "teams", "alloc_gpu_hours", "used_gpu_hours", "efficiency_pct", "idle_gpu_hours", "energy_kwh", "jobs", "share_pct"}, recs[0]); diff != "" {
		t.Errorf("CSV header (-want +got):\n%s", diff)
	}
	var sum float64
	for _, r := range recs[1:] {
		v, _ := strconv.ParseFloat(r[2], 64)
		sum += v
	}
	if d := sum*3600 - float64(wantAlloc); d > 1 || d < -1 {
		t.Errorf("CSV GPU-hours sum to %v GPU-s, want %d", sum*3600, wantAlloc)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, append(args, "--format", "json")...); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Report string
		Start  string
		Rows   []struct {
			User  string  `json:"user"`
			Alloc float64 `json:"alloc_gpu_hours"`
			Jobs  int64   `json:"jobs"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Report != "users" || doc.Start != "2025-12-01T00:00:00Z" || len(doc.Rows) != len(recs)-1 {
		t.Errorf("JSON %+v", doc)
	}
	var jobsN int64
	for i, r := range doc.Rows {
		if r.User != recs[i+1][0] || strconv.FormatFloat(r.Alloc, 'f', -1, 64) != recs[i+1][2] {
			t.Errorf("row %d: JSON %+v, CSV %v", i, r, recs[i+1])
		}
		jobsN += r.Jobs
	}
	if jobsN != int64(len(jobs)) {
		t.Errorf("%d jobs counted, %d run", jobsN, len(jobs))
	}
}

// TestCheckHelpDefaults: check's --help shows the defaults that apply
// (the config's), not the flags' zero values.
func TestCheckHelpDefaults(t *testing.T) {
	d, out, _ := testDeps(time.Now(), nil)
	if err := run(t, d, "check", "--help"); err != nil {
		t.Fatal(err)
	}
	def := config.Default().Report
	for _, want := range []string{
		"(default: " + def.CheckStale.Duration.String() + ")",
		"(default: " + def.CheckLag.Duration.String() + ")",
		"(default: " + def.CheckForget.Duration.String() + ")",
		"(default: " + strconv.Itoa(def.CheckLeftPasses) + ")",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check --help lacks %q:\n%s", want, out.String())
		}
	}
}

// TestClusterFlagHelp: each command's -M and --all-clusters say what
// they do there: job and plot fall back to every cluster for a job id,
// and only reports get a cluster column from --all-clusters.
func TestClusterFlagHelp(t *testing.T) {
	for _, tc := range []struct {
		cmd        string
		has, lacks string
	}{
		{"job", "every one when the local one is not in the ledger", "reports then show"},
		{"plot", "for a JOBID, every one when the local one is not in the ledger", "reports then show"},
		{"export", "the cluster column says whose each row is", "reports then show"},
		{"report", "reports then show a cluster column", "JOBID"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			d, out, _ := testDeps(time.Now(), nil)
			args := []string{tc.cmd, "--help"}
			if tc.cmd == "report" {
				args = []string{"report", "users", "--help"}
			}
			if err := run(t, d, args...); err != nil {
				t.Fatal(err)
			}
			help := strings.Join(strings.Fields(out.String()), " ")
			if !strings.Contains(help, tc.has) || strings.Contains(help, tc.lacks) {
				t.Errorf("%s --help: want %q and not %q:\n%s", tc.cmd, tc.has, tc.lacks, out.String())
			}
		})
	}
}

// TestStoreURLPassword: a PostgreSQL ledger that cannot be reached is
// named without the URL's password, by the reports and by check.
func TestStoreURLPassword(t *testing.T) {
	const url = "postgres://gpusuite:s3cret@127.0.0.1:1/acct?connect_timeout=5"
	for _, args := range [][]string{{"report", "teams", "--store-url", url}, {"job", "--store-url", url, "7"}, {"check", "--no-live", "--store-url", url}} {
		t.Run(args[0], func(t *testing.T) {
			d, out, errb := testDeps(time.Unix(t0, 0), nil)
			err := run(t, d, args...)
			if err == nil {
				t.Fatalf("no error from a server that does not answer; stdout %q", out.String())
			}
			all := err.Error() + out.String() + errb.String()
			if strings.Contains(all, "s3cret") || !strings.Contains(all, "127.0.0.1:1") {
				t.Errorf("want the server named without the password, got %q", all)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}
