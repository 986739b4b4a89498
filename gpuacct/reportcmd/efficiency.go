package reportcmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// efficiencyCommand is `gpuacct report efficiency`: over-asking per user,
// team or account, from sacct's resources of each run.
func efficiencyCommand(d Deps) *cli.Command {
	flags := append(append(append(cliwire.LedgerFlags(), windowFlags()...),
		&cli.StringFlag{Name: "by", Usage: "users, teams or accounts", Value: "users"},
	), filterFlags()...)
	flags = append(append(flags, clusterFlags()...), tableFlags()...)
	return &cli.Command{
		Name:  "efficiency",
		Usage: "CPU-hours allocated and used, memory asked for and used (GiB-hours) and time limits used, per user, team or account",
		UsageText: `gpuacct report efficiency [options]

The runs that ran in the window (default: the last 7 whole days), whole,
summed per user (--by teams, accounts): CPU-hours allocated (cores ×
elapsed) and used (sacct's TotalCPU), memory asked for and its peak held
over the run (GiB-hours, per node as seff counts it) and the share of their
time limits the runs needed; most allocated CPU-hours first, then a TOTAL.
"-" is not recorded: a site whose Slurm runs
JobAcctGatherType=jobacct_gather/none records no CPU time or memory peak.

Examples:
   gpuacct report efficiency --by teams
   gpuacct report efficiency --users alice --start now-30days   # your own: --users me
   gpuacct report efficiency --by accounts --format csv`,
		Flags:  flags,
		Action: func(c *cli.Context) error { return runEfficiency(c, d) },
	}
}

func runEfficiency(c *cli.Context, d Deps) error {
	const cmd = "report efficiency"
	if err := noArgs(c, cmd); err != nil {
		return err
	}
	e, w, err := loadWindow(c, d, cmd)
	if err != nil {
		return err
	}
	o, err := e.output(c, d)
	if err != nil {
		return cliwire.Usagef("%s: %v", cmd, err)
	}
	if by := c.String("by"); !oneOf(by, report.EffGroups...) {
		return cliwire.Usagef("%s: --by %q is not %s", cmd, by, strings.Join(report.EffGroups, ", "))
	}
	m, err := teams.Load(e.cfg.Report.Teams)
	if err != nil {
		return err
	}
	db, s, f, teamList, err := e.openFiltered(c, d, cmd, true)
	if err != nil {
		return err
	}
	defer db.Close()
	q := report.EffQuery{Window: w, Filter: f, Teams: teamList, Scope: s, Sort: "start", Now: e.now}
	t, err := db.EfficiencyReport(c.Context, q, c.String("by"), m)
	if report.IsBadInput(err) {
		return cliwire.Usagef("%s: %v", cmd, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return table.Write(d.Stdout, t, o)
}
