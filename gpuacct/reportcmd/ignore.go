package reportcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// currentUser names who runs the command, and who is behind sudo.
func currentUser(getenv func(string) string) string {
	name := strconv.Itoa(os.Geteuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if s := getenv("SUDO_USER"); s != "" && s != name {
		name += " (sudo by " + s + ")"
	}
	return name
}

// IgnoreCommand is `gpuacct ignore`.
func IgnoreCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "ignore",
		Usage: "leave jobs out of report totals (kept, listable, reversible; root or the service user)",
		UsageText: `gpuacct ignore JOBID... --reason TEXT
gpuacct ignore --list [--log]

Ignored jobs stay in the ledger and in 'gpuacct job', but count in no report
total. JOBID is 1234 (every run; every task of an array), 1234_7 or 1234+1.
The change is a request in report.requests that the store's one writer
applies: at once when no 'gpuacct serve' runs, else on serve's next pass.
Every change is kept with who made it ('--list --log'). Jobs whose Slurm
comment carries report.ignore_tag (default gpuacct:ignore) are ignored too.

Examples:
   sudo gpuacct ignore 123456 123457_3 --reason "benchmark run for the vendor"
   gpuacct ignore --list
   gpuacct ignore --list --log
   sudo gpuacct unignore 123456 --reason "counted after all"`,
		Flags: ignoreFlags(true),
		Action: func(c *cli.Context) error {
			if c.Bool("list") || c.Bool("log") {
				if c.Args().Present() {
					return cliwire.Usagef("ignore --list takes no JOBID")
				}
				return listIgnored(c, d)
			}
			return change(c, d, requests.Ignore)
		},
	}
}

// UnignoreCommand is `gpuacct unignore`.
func UnignoreCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "unignore",
		Usage: "count ignored jobs in report totals again (root or the service user)",
		UsageText: `gpuacct unignore JOBID... [--reason TEXT]

Examples:
   sudo gpuacct unignore 123456
   sudo gpuacct unignore 123456_3 --reason "was a real run"`,
		Flags:  ignoreFlags(false),
		Action: func(c *cli.Context) error { return change(c, d, requests.Unignore) },
	}
}

func ignoreFlags(list bool) []cli.Flag {
	f := append(cliwire.LedgerFlags(),
		&cli.StringFlag{Name: "reason", Usage: "why (kept with the change)"},
		&cli.StringFlag{Name: "requests", Usage: "request directory (report.requests)", EnvVars: []string{"GPUSUITE_REQUESTS"}},
	)
	f = append(f, clusterFlagsSaying("the jobs' cluster, when several share the ledger (default: the local one, SLURM_CLUSTER_NAME else cluster.name; else the one that has the job)",
		"look for the jobs on every cluster of the ledger (-M all); a job id two have is refused")...)
	if list {
		f = append(f,
			&cli.BoolFlag{Name: "list", Aliases: []string{"l"}, Usage: "list ignored jobs"},
			&cli.BoolFlag{Name: "log", Usage: "list every ignore/unignore change with who made it"},
			&cli.StringFlag{Name: "format", Usage: "table, csv, tsv or json (report.format)"},
			&cli.BoolFlag{Name: "parsable", Aliases: []string{"P"}, Usage: "'|'-separated"},
			&cli.BoolFlag{Name: "noheader", Aliases: []string{"n"}, Usage: "no header line"},
			&cli.StringFlag{Name: "tz", Usage: "time zone of times shown (report.tz)", EnvVars: []string{"GPUSUITE_TZ"}},
			&cli.StringFlag{Name: "teams-file", Usage: "team mapping file (report.teams)", EnvVars: []string{"GPUSUITE_TEAMS"}},
		)
	}
	return f
}

// loadQueue is load with --requests over report.requests, the request
// queue then following the ledger (config's FollowLedger).
func loadQueue(c *cli.Context, d Deps) (*env, error) {
	e, err := load(c, d)
	if err != nil {
		return nil, err
	}
	if c.IsSet("requests") {
		e.cfg.Report.Requests = c.String("requests")
	}
	e.cfg.FollowLedger()
	return e, nil
}

func change(c *cli.Context, d Deps, action string) error {
	if !c.Args().Present() {
		return cliwire.Usagef("%s: give at least one JOBID (see 'gpuacct %s --help')", action, action)
	}
	if action == requests.Ignore && strings.TrimSpace(c.String("reason")) == "" {
		return cliwire.Usagef("ignore: --reason is required: say why these jobs should not count")
	}
	// The writer's bounds, checked before anything is filed: a request
	// past them would be refused after the command had said "queued".
	if err := requests.CheckIgnoreBounds(c.String("reason"), c.Args().Len()); err != nil {
		return cliwire.Usagef("%s: %v", action, err)
	}
	var specs []string
	for _, a := range c.Args().Slice() {
		sp, err := report.ParseJobSpec(a)
		if err != nil {
			return &cliwire.UsageError{Err: fmt.Errorf("%s: %w", action, err)}
		}
		specs = append(specs, sp.String())
	}
	e, err := loadQueue(c, d)
	if err != nil {
		return err
	}
	svc, err := requests.ServiceUID(e.cfg.Ingest.ServiceUser)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	euid := d.Euid()
	if euid != 0 && euid != svc {
		return fmt.Errorf("%s: only root or the service user (ingest.service_user) may change what counts; try sudo", action)
	}
	// Every job must exist: a typo must not file a request that does nothing.
	// A request names its cluster: Slurm's job ids are per cluster, so
	// the jobs are filed by the cluster that has each.
	byCluster, order, err := jobClusters(c, e, specs)
	if report.IsBadInput(err) {
		return usage(action, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	// The queues are made as serve makes them, the service user's: run
	// as root, the command must not leave a root-owned queue behind.
	if err := requests.MakeQueues(e.cfg.Report.Requests, svc); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	var filed []*requests.Request
	var paths []string
	for _, cl := range order {
		r := &requests.Request{Action: action, Jobs: byCluster[cl], Cluster: cl, Reason: c.String("reason"), By: d.Username(), UID: euid, Time: e.now.UTC()}
		r.Host, _ = os.Hostname()
		p, err := requests.Submit(e.cfg.Report.Requests, r)
		if err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
		filed, paths = append(filed, r), append(paths, p)
	}
	path := strings.Join(paths, ", ")
	_, err = applyNow(c.Context, e, svc, euid)
	switch {
	case errors.Is(err, store.ErrLocked):
		fmt.Fprintf(d.Stdout, "%s %s: request %s queued; gpuacct serve applies it on its next pass (ingest.interval)\n", action, strings.Join(specs, " "), path)
		return nil
	case err != nil:
		return fmt.Errorf("%s: request %s is queued, but applying it failed: %w", action, path, err)
	}
	return reportOutcomes(d, e.cfg.Report.Requests, action, filed, paths)
}

// reportOutcomes prints what the writer decided on each filed request:
// applied (with the jobs it did not find), refused (the command fails),
// or still queued.
func reportOutcomes(d Deps, dir, action string, filed []*requests.Request, paths []string) error {
	var refusals []string
	for i, r := range filed {
		jobs := strings.Join(r.Jobs, " ")
		out, err := requests.IgnoreOutcome(dir, r.ID)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(d.Stdout, "%s %s: request %s queued; gpuacct serve applies it on its next pass (ingest.interval)\n", action, jobs, paths[i])
		case err != nil:
			return fmt.Errorf("%s: request %s: its outcome cannot be read: %w", action, paths[i], err)
		case out.Error != "":
			refusals = append(refusals, fmt.Sprintf("%s %s: %s", action, jobs, out.Error))
		case len(out.NotFound) > 0:
			fmt.Fprintf(d.Stdout, "%s %s: applied; not found: %s; see 'gpuacct ignore --list --log'\n", action, jobs, strings.Join(out.NotFound, " "))
		default:
			fmt.Fprintf(d.Stdout, "%s %s: applied; see 'gpuacct ignore --list --log'\n", action, jobs)
		}
	}
	if len(refusals) > 0 {
		return &cliwire.ExitError{Code: exitcode.Failure, Err: errors.New(strings.Join(refusals, "\n"))}
	}
	return nil
}

// jobClusters finds each job in the scope, refusing one the ledger does
// not have, and groups the jobs by the cluster that has them.
func jobClusters(c *cli.Context, e *env, specs []string) (map[string][]string, []string, error) {
	db, err := e.open(c.Context)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	s, err := e.scope(c, db, true)
	if err != nil {
		return nil, nil, err
	}
	by := map[string][]string{}
	var order []string
	for _, spec := range specs {
		sp, _ := report.ParseJobSpec(spec)
		cl, err := db.JobCluster(c.Context, s, sp)
		if err != nil {
			return nil, nil, err
		}
		if by[cl] == nil {
			order = append(order, cl)
		}
		by[cl] = append(by[cl], spec)
	}
	return by, order, nil
}

// applyNow applies pending requests when no writer holds the store.
func applyNow(ctx context.Context, e *env, svc, euid int) (int, error) {
	st, err := store.Open(ctx, store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL, Journal: e.cfg.Store.JournalMode, BusyTimeout: e.cfg.Store.BusyTimeout.Duration})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	host, _ := os.Hostname()
	return requests.Apply(ctx, st, requests.Options{Dir: e.cfg.Report.Requests, Now: e.now, Host: host, Tag: e.cfg.Report.IgnoreTag, Cluster: e.cfg.Cluster.Name, LiveDir: e.cfg.Board.LiveDir,
		Trusted: func(uid int) bool { return uid == 0 || uid == svc || uid == euid }})
}

func listIgnored(c *cli.Context, d Deps) error {
	e, err := loadQueue(c, d)
	if err != nil {
		return err
	}
	o, err := e.output(c, d)
	if err != nil {
		return &cliwire.UsageError{Err: fmt.Errorf("ignore --list: %w", err)}
	}
	if c.Bool("log") {
		pending, applied, err := requests.List(e.cfg.Report.Requests)
		if err != nil {
			return err
		}
		t := &table.Table{Title: "Ignore changes, oldest first (" + e.cfg.Report.Requests + ")", Columns: []table.Column{
			{Key: "time", Title: "TIME", Kind: table.Time}, {Key: "action", Title: "ACTION", Kind: table.Text},
			{Key: "jobs", Title: "JOBS", Kind: table.Text}, {Key: "by", Title: "BY", Kind: table.Text},
			{Key: "status", Title: "STATUS", Kind: table.Text}, {Key: "reason", Title: "REASON", Kind: table.Text},
		}, Meta: []table.KV{{Key: "report", Value: "ignore-log"}}}
		add := func(r requests.Request, status string) {
			t.Rows = append(t.Rows, table.Row{Cells: []any{r.Time.Unix(), r.Action, strings.Join(r.Jobs, " "), r.By, status, r.Reason}})
		}
		for _, r := range applied {
			status := "applied"
			switch {
			case r.Error != "":
				status = r.Error
			case len(r.NotFound) > 0:
				status = "applied; not found: " + strings.Join(r.NotFound, " ")
			}
			add(r, status)
		}
		for _, r := range pending {
			add(r, "pending")
		}
		return table.Write(d.Stdout, t, o)
	}
	m, err := teams.Load(e.cfg.Report.Teams)
	if err != nil {
		return err
	}
	db, s, err := e.openScoped(c, "ignore --list", false)
	if err != nil {
		return err
	}
	defer db.Close()
	title := "Ignored jobs (not counted in report totals)"
	if on := s.Title(); on != "" {
		title = "Ignored jobs on " + on + " (not counted in report totals)"
	}
	t := &table.Table{Title: title, Columns: []table.Column{
		{Key: "job", Title: "JOBID", Kind: table.Text}, {Key: "user", Title: "USER", Kind: table.Text},
		{Key: "team", Title: "TEAM", Kind: table.Text}, {Key: "start", Title: "START", Kind: table.Time},
		{Key: "alloc_gpu", Title: "ALLOC", Kind: table.GPUSeconds}, {Key: "reason", Title: "REASON", Kind: table.Text},
	}, Meta: []table.KV{{Key: "report", Value: "ignored"}}}
	if s.Several() {
		t.Columns = append([]table.Column{{Key: "cluster", Title: "CLUSTER", Kind: table.Text}}, t.Columns...)
	}
	all := report.JobsQuery{Ignored: true, Mapping: m, Sort: "start", Window: report.AllTime(e.now), Filter: report.Filter{Clusters: s.Filter()}}
	err = db.Jobs(c.Context, all, func(j *report.JobRow) bool {
		row := []any{j.ID(), j.User, m.Team(j.Account, j.User), j.Start, j.AllocS, j.Reason()}
		if s.Several() {
			row = append([]any{j.Cluster}, row...)
		}
		t.Rows = append(t.Rows, table.Row{Cells: row})
		return true
	})
	if err != nil {
		return err
	}
	if pending, _, err := requests.List(e.cfg.Report.Requests); err == nil && len(pending) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d request(s) pending: gpuacct serve applies them on its next pass", len(pending)))
	}
	return table.Write(d.Stdout, t, o)
}
