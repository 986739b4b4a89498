package reportcmd

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// budgetCommand is `gpuacct report budget`: each configured budget's
// burn-down ([budget] in the config).
func budgetCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "budget",
		Usage: "each budget ([[budget.entry]]): used, left, elapsed, the last 7 days' pace and when it runs out",
		UsageText: `gpuacct report budget [options]

Each budget of the config's [[budget.entry]] in its period in force now
(or at --at): its amount, used, left, the share used and the share of the
period elapsed, the pace of the last 7 days and the day the budget runs out
at that pace (blank: not before the period ends). Periods begin at midnight
in --tz (report.tz). See docs/budgets.md.

Examples:
   gpuacct report budget
   gpuacct report budget --account vision --period quarter
   gpuacct report budget --at 2026-03-31 --tz Asia/Tokyo --format json
   gpuacct report budget --slurm          # beside Slurm's GrpTRESMins`,
		Flags: append(append(cliwire.LedgerFlags(),
			&cli.StringSliceFlag{Name: "account", Aliases: []string{"A"}, Usage: "only these Slurm accounts' budgets (comma-separated)"},
			&cli.StringFlag{Name: "period", Usage: "only budgets of this period: month, quarter, fiscal-year or range"},
			&cli.StringFlag{Name: "at", Usage: "the moment to show: " + timespec.Formats + " (default: now)"},
			&cli.StringFlag{Name: "tz", Usage: "time zone periods begin in (report.tz)", EnvVars: []string{"GPUSUITE_TZ"}},
			&cli.BoolFlag{Name: "slurm", Usage: "add each association's GrpTRESMins and Slurm's usage of it (scontrol show assoc_mgr, within board.slurm_timeout): Slurm's limit is what stops jobs"},
			&cli.StringFlag{Name: "teams-file", Usage: "team mapping file (report.teams): its accounts may hold budgets", EnvVars: []string{"GPUSUITE_TEAMS"}},
		), tableFlags()...),
		Action: func(c *cli.Context) error { return runBudget(c, d) },
	}
}

func runBudget(c *cli.Context, d Deps) error {
	const cmd = "report budget"
	if err := noArgs(c, cmd); err != nil {
		return err
	}
	e, err := load(c, d)
	if err != nil {
		return err
	}
	o, err := e.output(c, d)
	if err != nil {
		return cliwire.Usagef("%s: %v", cmd, err)
	}
	at := e.now
	if s := c.String("at"); s != "" {
		if at, err = timespec.Parse(s, e.now, e.loc); err != nil {
			return cliwire.Usagef("%s: --at: %v", cmd, err)
		}
	}
	kind := budget.Kind(c.String("period"))
	if kind != "" && !slices.Contains([]budget.Kind{budget.Month, budget.Quarter, budget.FiscalYear, budget.Range}, kind) {
		return cliwire.Usagef("%s: --period %q is not month, quarter, fiscal-year or range", cmd, kind)
	}
	m, err := teams.Load(e.cfg.Report.Teams)
	if err != nil {
		return err
	}
	db, err := e.open(c.Context)
	if err != nil {
		return err
	}
	defer db.Close()
	all, err := checkBudgets(c.Context, cmd, e, db, m)
	if err != nil {
		return err
	}
	accounts := listOf(c, "account")
	for i := range accounts {
		accounts[i] = strings.ToLower(accounts[i])
	}
	var bs []budget.Budget
	for _, b := range all {
		if (len(accounts) == 0 || slices.Contains(accounts, b.Account)) && (kind == "" || b.Kind == kind) {
			bs = append(bs, b)
		}
	}
	burns, err := db.Burns(c.Context, bs, at, e.loc, time.Month(e.cfg.Budget.FiscalStart))
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	var limits []budget.SlurmLimit
	if c.Bool("slurm") {
		if limits, err = budget.ReadSlurmLimits(c.Context, e.cfg.Board.SlurmTimeout.Duration); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		if limits == nil {
			limits = []budget.SlurmLimit{} // asked: the columns show, "-" each
		}
	}
	return table.Write(d.Stdout, report.BudgetTable(burns, at, e.loc, limits), o)
}
