package reportcmd

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// JobsCommand is `gpuacct jobs`: reportseff's table of many runs.
func JobsCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "jobs",
		Usage: "many jobs at once, like reportseff: per run its time, CPU, memory and GPU efficiency, GPU memory peak and idle share",
		UsageText: `gpuacct jobs [options]

One row per job run that ran in the window (default: the last 7 days up to
now): state, elapsed, time used of the limit (TIME%), CPU efficiency
(TotalCPU of cores × elapsed), memory peak of the memory asked for per node
(MEM%), GPU efficiency (used of allocated GPU-time), the highest GPU memory
peak of a GPU's memory and the GPUs' idle share; then a TOTAL of the shown
and hidden runs. "-" is a figure not recorded: a site whose Slurm runs
JobAcctGatherType=jobacct_gather/none records no CPU time or memory peak.
On a terminal a run that used under half of what it asked for is yellow,
under a quarter red (NO_COLOR: no colour).

Examples:
   gpuacct jobs --user alice --since 7d             # your own runs: --user me
   gpuacct jobs --account vision --state completed,timeout --sort mem
   gpuacct jobs --array 123456                      # every task of the array job
   gpuacct jobs --user alice --format csv > runs.csv
   gpuacct jobs --format json | jq '.rows[] | {job, state, elapsed_s}'`,
		Flags: append(append(cliwire.LedgerFlags(),
			&cli.StringFlag{Name: "since", Aliases: []string{"S", "start"}, Usage: "runs that ran after this: Nd, Nh, Nw (ago) or " + timespec.Formats + " (default: 7 days ago)"},
			&cli.StringFlag{Name: "until", Aliases: []string{"E", "end"}, Usage: "runs that ran before this (default: now)"},
			&cli.StringFlag{Name: "tz", Usage: "time zone of the dates (report.tz)", EnvVars: []string{"GPUSUITE_TZ"}},
			&cli.StringSliceFlag{Name: "user", Aliases: []string{"u", "users"}, Usage: "only these users (comma-separated; me: you)"},
			&cli.StringSliceFlag{Name: "account", Aliases: []string{"A", "accounts"}, Usage: "only these Slurm accounts"},
			&cli.StringSliceFlag{Name: "partition", Aliases: []string{"r", "partitions"}, Usage: "only these partitions"},
			&cli.StringSliceFlag{Name: "state", Aliases: []string{"s"}, Usage: "only runs in these states: " + strings.Join(report.JobStates, ", ")},
			&cli.StringFlag{Name: "array", Usage: "only the tasks of this array `JOBID` (the whole history unless --since is given)"},
			&cli.StringFlag{Name: "sort", Usage: "start (newest first), elapsed, time, cpu, mem, gpu (lowest first) or idle (most first)", Value: "start"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many rows; a line says how many more matched", Value: 50},
			&cli.StringFlag{Name: "format", Usage: "text, csv, tsv or json (report.format)", EnvVars: []string{"GPUSUITE_REPORT_FORMAT"}},
			&cli.BoolFlag{Name: "parsable", Aliases: []string{"P"}, Usage: "'|'-separated machine values, like sacct -P"},
			&cli.BoolFlag{Name: "noheader", Aliases: []string{"n"}, Usage: "no header line (nor title and notes)"},
		), clusterFlags()...),
		Action: func(c *cli.Context) error { return runJobs(c, d) },
	}
}

// agoRE is reportseff's and jobstats' "7d": that long before now.
var agoRE = regexp.MustCompile(`^(\d+)([hdw])$`)

// sinceSpec is s as timespec reads it: "7d" is now-7days.
func sinceSpec(s string) string {
	m := agoRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return s
	}
	return "now-" + m[1] + map[string]string{"h": "hours", "d": "days", "w": "weeks"}[m[2]]
}

func runJobs(c *cli.Context, d Deps) error {
	if c.Args().Present() {
		return cliwire.Usagef("jobs: unexpected argument %q (a job's own figures: gpuacct job %s)", c.Args().First(), c.Args().First())
	}
	e, err := load(c, d)
	if err != nil {
		return err
	}
	o, err := e.output(c, d)
	if err != nil {
		return cliwire.Usagef("jobs: %v", err)
	}
	q := report.EffQuery{Sort: c.String("sort"), Limit: c.Int("limit"), Now: e.now}
	if _, ok := report.EffSorts[q.Sort]; !ok {
		return cliwire.Usagef("jobs: --sort %q is not start, elapsed, time, cpu, mem, gpu or idle", q.Sort)
	}
	if q.Limit < 1 || q.Limit > report.MaxLimit {
		return cliwire.Usagef("jobs: --limit %d is not from 1 to %d", q.Limit, report.MaxLimit)
	}
	for _, s := range listOf(c, "state") {
		s = strings.ToLower(s)
		if !oneOf(s, report.JobStates...) {
			return cliwire.Usagef("jobs: --state %q is not one of %s", s, strings.Join(report.JobStates, ", "))
		}
		q.States = append(q.States, s)
	}
	if a := c.String("array"); a != "" {
		if q.Array, err = strconv.ParseInt(a, 10, 64); err != nil || q.Array <= 0 {
			return cliwire.Usagef("jobs: --array %q is not an array job id such as 1234", a)
		}
	}
	since, until := sinceSpec(c.String("since")), sinceSpec(c.String("until"))
	if since == "" && until == "" {
		since = "now-7days"
	}
	if q.Window, err = timespec.Resolve(since, until, e.now, e.loc); err != nil {
		msg := strings.NewReplacer("--start", "--since", "--end", "--until").Replace(err.Error())
		return cliwire.Usagef("jobs: %s", msg)
	}
	if q.Array != 0 && !c.IsSet("since") && !c.IsSet("until") {
		q.Window = report.AllTime(e.now)
	}
	caller := d.Caller
	if caller == nil {
		caller = systemCaller
	}
	if q.Filter.Users, err = cliwire.ResolveMe(listOf(c, "user"), caller); err != nil {
		return err
	}
	q.Filter.Accounts, q.Filter.Partitions = listOf(c, "account"), listOf(c, "partition")
	for i := range q.Filter.Accounts {
		q.Filter.Accounts[i] = strings.ToLower(q.Filter.Accounts[i]) // as Slurm stores them
	}
	db, s, err := e.openScoped(c, "jobs", false)
	if err != nil {
		return err
	}
	defer db.Close()
	q.Scope, q.Filter.Clusters = s, s.Filter()
	if err := db.CheckFilter(c.Context, q.Filter); err != nil {
		return cliwire.Usagef("jobs: %v", err)
	}
	if o.Format == table.Aligned {
		q.Lang = i18n.ForEnv(d.Getenv) // the machine formats stay as they are
	}
	t, err := db.JobEfficiencies(c.Context, q)
	if report.IsBadInput(err) {
		return cliwire.Usagef("jobs: %v", err)
	}
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	// Colour only on a terminal (a pipe or file gets plain text) and not
	// under NO_COLOR.
	if o.Format != table.Aligned || d.Width() == 0 || d.Getenv("NO_COLOR") != "" {
		return table.Write(d.Stdout, t, o)
	}
	var b strings.Builder
	if err := table.Write(&b, t, o); err != nil {
		return err
	}
	_, err = io.WriteString(d.Stdout, colourRuns(b.String(), t))
	return err
}

// The terminal's colours for a run that used far less than it asked for.
const (
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	plain  = "\x1b[0m"
)

// colourRuns colours each run's line of the aligned table text of t:
// red when a share of what it asked for (time, CPU, memory, GPU) is under
// 25 %, yellow under 50 %. A run's line is the next one that starts with
// its first cell: the table writes its rows in order, one line each.
func colourRuns(text string, t *table.Table) string {
	shares := map[string]bool{"time_eff_pct": true, "cpu_eff_pct": true, "mem_eff_pct": true, "gpu_eff_pct": true}
	lines := strings.SplitAfter(text, "\n")
	r := 0
	for i := range lines {
		if r == len(t.Rows) || t.Rows[r].Footer {
			break
		}
		row := t.Rows[r]
		if !strings.HasPrefix(lines[i], fmt.Sprint(row.Cells[0])+" ") {
			continue
		}
		r++
		worst := 100.0
		for k, c := range t.Columns {
			if v, ok := row.Cells[k].(float64); ok && shares[c.Key] {
				worst = min(worst, v)
			}
		}
		colour := ""
		switch {
		case worst < 25:
			colour = red
		case worst < 50:
			colour = yellow
		}
		if colour != "" {
			lines[i] = colour + strings.TrimSuffix(lines[i], "\n") + plain + "\n"
		}
	}
	return strings.Join(lines, "")
}
