// Package reportcmd is the command line of gpuacct report, job, check,
// export, plot, ignore and unignore over internal/report.
//
// Files: command.go (report and what the commands share), cluster.go
// (report cluster), job.go, check.go, export.go, plot.go, ignore.go
// (ignore and unignore).
package reportcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// Deps is what the report commands take from the process; tests set each.
type Deps struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Width is the terminal width of Stdout, 0 when it is not a terminal.
	Width func() int
	// StderrTTY reports whether Stderr is a terminal (progress bars).
	StderrTTY func() bool
	// Euid and Username identify who asks for an ignore change.
	Euid     func() int
	Username func() string
	// Caller is the real uid's user name, what "me" in a user flag
	// means (cliwire.Caller); nil asks the system.
	Caller func() (string, error)
}

// System is Deps for the real process.
func System(stdout, stderr io.Writer, getenv func(string) string) Deps {
	return Deps{
		Stdout: stdout, Stderr: stderr, Getenv: getenv, Now: time.Now,
		Width:     func() int { return termWidth(stdout, getenv) },
		StderrTTY: func() bool { return isTerminal(stderr) },
		Euid:      os.Geteuid,
		Username:  func() string { return currentUser(getenv) },
		Caller:    systemCaller,
	}
}

func systemCaller() (string, error) { return cliwire.Caller(os.Getuid(), user.LookupId) }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth is $COLUMNS, else the terminal's width, else 0 (a pipe:
// nothing is cut).
func termWidth(w io.Writer, getenv func(string) string) int {
	if !isTerminal(w) {
		return 0
	}
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	width, _, err := term.GetSize(int(w.(*os.File).Fd()))
	if err != nil || width <= 0 {
		return 80
	}
	return width
}

// ---- flags shared by the commands

func windowFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "start", Aliases: []string{"S"}, Usage: "start of the window: " + timespec.Formats + " (default: 7 days before today 00:00)"},
		&cli.StringFlag{Name: "end", Aliases: []string{"E"}, Usage: "end of the window, exclusive (default: today 00:00, or now with --start)"},
		&cli.StringFlag{Name: "tz", Usage: "time zone of dates and periods (report.tz)", EnvVars: []string{"GPUSUITE_TZ"}},
	}
}

func outputFlags() []cli.Flag {
	return outputFlagsSaying("GPU-time columns in seconds (whole: compare with sreport -t seconds), minutes, hours or percent of the cluster's allocated GPU-time (report.units)")
}

// outputFlagsSaying are outputFlags with a command's own --units usage
// line (what its percent is of).
func outputFlagsSaying(units string) []cli.Flag {
	return append(tableFlags(),
		&cli.StringFlag{Name: "units", Aliases: []string{"t"}, Usage: units, EnvVars: []string{"GPUSUITE_REPORT_UNITS"}})
}

// tableFlags say how a table is written, for a command whose table has
// no GPU-time units to choose.
func tableFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Usage: "table, csv, tsv or json (report.format)", EnvVars: []string{"GPUSUITE_REPORT_FORMAT"}},
		&cli.BoolFlag{Name: "parsable", Aliases: []string{"P"}, Usage: "'|'-separated machine values, like sreport -P"},
		&cli.BoolFlag{Name: "noheader", Aliases: []string{"n"}, Usage: "no header line (nor title and notes)"},
	}
}

func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "users", Aliases: []string{"u"}, Usage: "only these users (comma-separated)"},
		&cli.StringSliceFlag{Name: "teams", Usage: "only these teams (or the teams under these organisations)"},
		&cli.StringSliceFlag{Name: "accounts", Aliases: []string{"A"}, Usage: "only these Slurm accounts"},
		&cli.StringSliceFlag{Name: "partitions", Aliases: []string{"r"}, Usage: "only these partitions"},
		&cli.StringSliceFlag{Name: "nodes", Aliases: []string{"N"}, Usage: "only these nodes"},
		&cli.StringSliceFlag{Name: "models", Aliases: []string{"m"}, Usage: "only these GPU models (as NVML names them)"},
		&cli.StringFlag{Name: "teams-file", Usage: "team mapping file (report.teams)", EnvVars: []string{"GPUSUITE_TEAMS"}},
	}
}

// clusterFlags pick the clusters of a ledger several share, as sacct's
// and sreport's -M do.
func clusterFlags() []cli.Flag {
	return clusterFlagsSaying("these clusters of the ledger (comma-separated; all: every one). Default: the local one (SLURM_CLUSTER_NAME, else cluster.name) when several share the ledger",
		"every cluster of the ledger (-M all); reports then show a cluster column")
}

// clusterFlagsSaying are clusterFlags with a command's own usage lines.
// --cluster, which job and ignore took before, is --clusters unlisted.
func clusterFlagsSaying(names, all string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "clusters", Aliases: []string{"M"}, Usage: names},
		&cli.StringSliceFlag{Name: "cluster", Usage: "as --clusters", Hidden: true},
		&cli.BoolFlag{Name: "all-clusters", Usage: all},
	}
}

// env is what every command resolves first: config with flags applied.
type env struct {
	cfg    config.Config
	loc    *time.Location
	now    time.Time
	getenv func(string) string
}

func load(c *cli.Context, d Deps) (*env, error) {
	cfg, err := cliwire.LoadConfig(c, d.Getenv)
	if err != nil {
		return nil, err
	}
	cliwire.SetLedger(c, &cfg.Store)
	cliwire.SetStrings(c, map[string]*string{"tz": &cfg.Report.TZ,
		"teams-file": &cfg.Report.Teams, "format": &cfg.Report.Format, "units": &cfg.Report.Units})
	loc, err := timespec.LoadLocation(cfg.Report.TZ)
	if err != nil {
		// config.Load has checked the file's zone: this one is --tz's.
		return nil, &cliwire.UsageError{Err: err}
	}
	return &env{cfg: cfg, loc: loc, now: d.Now(), getenv: d.Getenv}, nil
}

// scope resolves -M and --all-clusters against the ledger's clusters;
// defaultAll reads every cluster when several share the ledger and the
// local one is not among them (a job id is then looked for on each).
func (e *env) scope(c *cli.Context, db *report.Ledger, defaultAll bool) (report.Scope, error) {
	local := e.getenv("SLURM_CLUSTER_NAME")
	if local == "" {
		local = e.cfg.Cluster.Name
	}
	return db.Scope(report.ScopeRequest{Ask: append(listOf(c, "clusters"), listOf(c, "cluster")...), Given: c.IsSet("clusters") || c.IsSet("cluster"),
		All: c.Bool("all-clusters"), Local: local, DefaultAll: defaultAll})
}

// noArgs refuses an argument given to what, a report that takes none:
// its options were likely meant to go with --.
func noArgs(c *cli.Context, what string) error {
	if c.Args().Present() {
		return cliwire.Usagef("%s: unexpected argument %q (options go with --)", what, c.Args().First())
	}
	return nil
}

// usage is err as the usage error (exit 2) it is when the asker must fix
// it, else err.
func usage(what string, err error) error {
	if report.IsBadInput(err) {
		return &cliwire.UsageError{Err: fmt.Errorf("%s: %w", what, err)}
	}
	return err
}

func (e *env) open(ctx context.Context) (*report.Ledger, error) {
	return report.OpenDB(ctx, e.cfg.Store.Location(), e.cfg.Store.BusyTimeout.Duration)
}

// openScoped opens the ledger and resolves the clusters a command reads
// (scope); a scope the asker must fix is a usage error of what. The
// caller closes the DB.
func (e *env) openScoped(c *cli.Context, what string, defaultAll bool) (*report.Ledger, report.Scope, error) {
	db, err := e.open(c.Context)
	if err != nil {
		return nil, report.Scope{}, err
	}
	s, err := e.scope(c, db, defaultAll)
	if err != nil {
		db.Close()
		return nil, report.Scope{}, usage(what, err)
	}
	return db, s, nil
}

// openFiltered is openScoped for a command that reads the report filters
// (filterOf): the filter is narrowed to the scope's clusters and, with
// check, one naming what the ledger lacks is a usage error of what. The
// caller closes the DB.
func (e *env) openFiltered(c *cli.Context, d Deps, what string, check bool) (*report.Ledger, report.Scope, report.Filter, []string, error) {
	f, teamList, err := filterOf(c, d)
	if err != nil {
		return nil, report.Scope{}, f, nil, err
	}
	db, s, err := e.openScoped(c, what, false)
	if err != nil {
		return nil, report.Scope{}, f, nil, err
	}
	f.Clusters = s.Filter()
	if check {
		if err := db.CheckFilter(c.Context, f); err != nil {
			db.Close()
			return nil, report.Scope{}, f, nil, cliwire.Usagef("%s: %v", what, err)
		}
	}
	return db, s, f, teamList, nil
}

// jobArg is the one JOBID job and plot take; without exactly one, the
// usage error says missing.
func jobArg(c *cli.Context, missing string) (report.JobSpec, error) {
	if c.NArg() != 1 {
		return report.JobSpec{}, &cliwire.UsageError{Err: errors.New(missing)}
	}
	sp, err := report.ParseJobSpec(c.Args().First())
	if err != nil {
		return report.JobSpec{}, &cliwire.UsageError{Err: err}
	}
	return sp, nil
}

// job reads one job's detail (job and plot share it), and with messages
// the notifier's messages about the run and its resources from sacct (nil
// when it has none), closing the ledger before the
// caller renders.
func (e *env) job(c *cli.Context, sp report.JobSpec, messages bool) (*report.Detail, []report.JobMessage, *report.RunResources, error) {
	db, s, err := e.openScoped(c, "job "+sp.String(), true)
	if err != nil {
		return nil, nil, nil, err
	}
	defer db.Close()
	det, err := db.JobIn(c.Context, s, sp, e.now)
	if report.IsBadInput(err) {
		return nil, nil, nil, &cliwire.UsageError{Err: err} // "job 7 is on clusters ...": the job named first
	}
	if err != nil || !messages {
		return det, nil, nil, err
	}
	ms, err := db.JobMessages(c.Context, &det.Job)
	if err != nil {
		return nil, nil, nil, err
	}
	u, err := db.RunResourcesOf(c.Context, det)
	return det, ms, u, err
}

// loadWindow is load, then the window of --start and --end; a window that
// does not parse is a usage error of cmd.
func loadWindow(c *cli.Context, d Deps, cmd string) (*env, timespec.Window, error) {
	e, err := load(c, d)
	if err != nil {
		return nil, timespec.Window{}, err
	}
	w, err := e.window(c)
	if err != nil {
		return nil, timespec.Window{}, cliwire.Usagef("%s: %v", cmd, err)
	}
	return e, w, nil
}

func (e *env) window(c *cli.Context) (timespec.Window, error) {
	return timespec.Resolve(c.String("start"), c.String("end"), e.now, e.loc)
}

func (e *env) output(c *cli.Context, d Deps) (table.Options, error) {
	f, err := table.ParseFormat(e.cfg.Report.Format)
	if err != nil {
		return table.Options{}, err
	}
	if c.Bool("parsable") {
		f = table.Parsable
	}
	u, err := table.ParseUnits(e.cfg.Report.Units)
	if err != nil {
		return table.Options{}, err
	}
	o := table.Options{Format: f, Units: u, NoHeader: c.Bool("noheader")}
	if f == table.Aligned {
		o.Width = d.Width()
		loc := e.loc
		o.TimeFormat = func(t int64) string { return time.Unix(t, 0).In(loc).Format("2006-01-02 15:04") }
	}
	return o, nil
}

// levelOf is --level: a whole number from 1, 0 when not given. It is a
// string flag so that "--level x" gets the same one line as "--level 0".
func levelOf(c *cli.Context, kind string) (int, error) {
	if !c.IsSet("level") {
		return 0, nil
	}
	v := c.String("level")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--level %q: give a level from 1 (the top organisations) down", v)
	}
	if kind == "jobs" {
		return 0, fmt.Errorf("--level rolls teams up to their organisations: use it with report teams, tree or top --by teams")
	}
	return n, nil
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// listOf is a comma-separated, repeatable flag's values.
func listOf(c *cli.Context, name string) []string {
	var out []string
	for _, v := range c.StringSlice(name) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// filterOf is the report filter of the flags, "me" among the users the
// caller; the clusters come from the scope (env.scope).
func filterOf(c *cli.Context, d Deps) (report.Filter, []string, error) {
	list := func(name string) []string { return listOf(c, name) }
	accts := list("accounts")
	for i := range accts {
		accts[i] = strings.ToLower(accts[i]) // as Slurm stores them
	}
	caller := d.Caller
	if caller == nil {
		caller = systemCaller
	}
	users, err := cliwire.ResolveMe(list("users"), caller)
	if err != nil {
		return report.Filter{}, nil, err
	}
	return report.Filter{Users: users, Accounts: accts, Partitions: list("partitions"),
		Nodes: list("nodes"), Models: list("models")}, list("teams"), nil
}

// ReportCommand is `gpuacct report`.
func ReportCommand(d Deps) *cli.Command {
	flags := append(append(append(append(cliwire.LedgerFlags(), windowFlags()...),
		&cli.StringFlag{Name: "period", Usage: "a time series: day, week or month (default: one total)"},
		&cli.IntFlag{Name: "limit", Usage: "at most this many rows per period", DefaultText: "10 for top, 50 for jobs"},
		&cli.StringFlag{Name: "by", Usage: "top: users or teams", Value: "users"},
		&cli.StringFlag{Name: "sort", Usage: "jobs: start, alloc, eff (lowest first) or idle", Value: "start"},
		&cli.StringFlag{Name: "level", Usage: "teams, tree, top --by teams: roll teams up to their organisation at level `N` (1: the top ones; Slurm's parent accounts or the mapping file's parents)"},
		&cli.StringFlag{Name: "tres", Aliases: []string{"T"}, Usage: "what is counted, as sreport -T: gres/gpu (GPU-time) or billing (billing units × time, docs/budgets.md)", Value: report.TRESGPU},
	), filterFlags()...), append(clusterFlags(), outputFlags()...)...)
	var subs []*cli.Command
	for _, k := range report.Kinds {
		k := k
		subs = append(subs, &cli.Command{
			Name:      k,
			Usage:     kindUsage[k],
			UsageText: "gpuacct report " + k + " [options]\n\n" + reportExamples,
			Flags:     flags,
			Action:    func(c *cli.Context) error { return runReport(c, d, k) },
		})
	}
	return &cli.Command{
		Name:  "report",
		Usage: "sreport-style GPU-hours by team, user, account, partition, node or model",
		UsageText: "gpuacct report {" + strings.Join(reportKinds(), "|") + "} [options]\n\n" +
			`Allocated GPU-hours (GPUs × elapsed, what Slurm charges), used GPU-hours
(Σ utilization × time), efficiency, idle GPU-hours, energy, jobs started and
share of the cluster, over a window (default: the last 7 whole days), as one
total or per day, week or month. Jobs crossing a period boundary are split at
it. Ignored jobs are left out. See docs/reports.md.

` + reportExamples,
		Subcommands: append(subs, clusterCommand(d), efficiencyCommand(d), budgetCommand(d)),
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return cliwire.Usagef("report: unknown report %q: use one of %s", c.Args().First(), strings.Join(reportKinds(), ", "))
			}
			return cliwire.Usagef("report: name a report: one of %s (see 'gpuacct report --help')", strings.Join(reportKinds(), ", "))
		},
	}
}

// reportKinds are the reports `gpuacct report` takes: internal/report's
// kinds and cluster, which has a command of its own.
func reportKinds() []string { return append(append([]string(nil), report.Kinds...), "cluster") }

var kindUsage = map[string]string{
	"teams":      "GPU-hours per team (Slurm account, or the team mapping file)",
	"users":      "GPU-hours per user",
	"accounts":   "GPU-hours per Slurm account",
	"partitions": "GPU-hours per partition",
	"nodes":      "GPU-hours per node",
	"models":     "GPU-hours per GPU model",
	"tree":       "each organisation and team (the sum of all under it), its users, a TOTAL (like sreport cluster AccountUtilizationByUser)",
	"top":        "the top N users (or --by teams)",
	"jobs":       "jobs in the window with their efficiency",
}

const reportExamples = `Examples:
   gpuacct report teams                                  # last 7 days
   gpuacct report teams --start 2026-01-01 --end 2027-01-01 --period month
   gpuacct report users --teams vision --start now-2days
   gpuacct report tree --start 11/01/26 --end 12/01/26 --tz Asia/Tokyo
   gpuacct report tree -t seconds -P --start now-1days   # compare with sreport -t seconds -P
   gpuacct report teams --level 1                        # per top organisation
   gpuacct report top --by teams --limit 5 --units percent
   gpuacct report jobs --users alice --sort eff --limit 20
   gpuacct report nodes -P -n --start yesterday --end today   # for scripts
   gpuacct report teams --format json | jq '.rows[] | {team, alloc_gpu_hours}'
   gpuacct report users -M gpu2                          # another cluster of the ledger
   gpuacct report teams --all-clusters                   # every cluster, a CLUSTER column`

func runReport(c *cli.Context, d Deps, kind string) error {
	if err := noArgs(c, "report "+kind); err != nil {
		return err
	}
	e, w, err := loadWindow(c, d, "report "+kind)
	if err != nil {
		return err
	}
	p, err := timespec.ParsePeriod(c.String("period"))
	if err != nil {
		return cliwire.Usagef("report %s: %v", kind, err)
	}
	o, err := e.output(c, d)
	if err != nil {
		return cliwire.Usagef("report %s: %v", kind, err)
	}
	level, err := levelOf(c, kind)
	if err != nil {
		return cliwire.Usagef("report %s: %v", kind, err)
	}
	m, err := teams.Load(e.cfg.Report.Teams)
	if err != nil {
		return err
	}
	// internal/report refuses these too, but after the ledger is open and
	// as a failure: a typo is the asker's, exit 2, before any read.
	if s := c.String("sort"); kind == "jobs" && !oneOf(s, "start", "alloc", "eff", "idle") {
		return cliwire.Usagef("report jobs: --sort %q is not start, alloc, eff or idle", s)
	}
	if by := c.String("by"); kind == "top" && !oneOf(by, "users", "teams") {
		return cliwire.Usagef("report top: --by %q is not users or teams", by)
	}
	if err := report.CheckTRES(c.String("tres")); err != nil {
		return cliwire.Usagef("report %s: %v", kind, err)
	}
	if c.IsSet("limit") && (c.Int("limit") < 1 || c.Int("limit") > report.MaxLimit) {
		return cliwire.Usagef("report %s: --limit %d is not from 1 to %d", kind, c.Int("limit"), report.MaxLimit)
	}
	if kind != "jobs" {
		if err := timespec.CheckBuckets(report.HourWindow(w), p); err != nil {
			return cliwire.Usagef("report %s: %v", kind, err)
		}
	}
	db, s, f, teamList, err := e.openFiltered(c, d, "report "+kind, true)
	if err != nil {
		return err
	}
	defer db.Close()
	var t *table.Table
	if kind == "jobs" {
		t, err = db.JobList(c.Context, report.JobsQuery{Window: w, Filter: f, Teams: teamList, Mapping: m, Limit: c.Int("limit"), Sort: c.String("sort"), Now: e.now,
			Scope: s})
	} else {
		t, err = db.Report(c.Context, report.Request{Kind: kind, Window: report.HourWindow(w), Period: p, Filter: f, Teams: teamList, Mapping: m,
			TopBy: c.String("by"), Limit: c.Int("limit"), Level: level, Scope: s, TRES: c.String("tres")})
	}
	if report.IsBadInput(err) {
		return cliwire.Usagef("report %s: %v", kind, err)
	}
	if err != nil {
		return fmt.Errorf("report %s: %w", kind, err)
	}
	if kind == "teams" {
		if err := teamBudgets(c.Context, e, db, m, t); err != nil {
			return err
		}
	}
	return table.Write(d.Stdout, t, o)
}
