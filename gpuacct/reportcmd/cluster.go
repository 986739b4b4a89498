package reportcmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

const clusterExamples = `Examples:
   gpuacct report cluster                                # last 7 days
   gpuacct report cluster --start now-1days --period day -t percent
   gpuacct report cluster -t seconds -P -n --start 2026-11-01 --end 2026-12-01   # as sreport -t seconds -P -n
   gpuacct report cluster --all-clusters --format json`

// clusterCommand is `gpuacct report cluster`: sreport's cluster
// utilization for GPUs.
func clusterCommand(d Deps) *cli.Command {
	flags := append(append(cliwire.LedgerFlags(), windowFlags()...),
		&cli.StringFlag{Name: "period", Usage: "a time series: day, week or month (default: one total)"})
	flags = append(flags, clusterFlags()...)
	flags = append(flags, outputFlagsSaying("GPU-time columns in seconds, minutes, hours or percent of the capacity (report.units)")...)
	return &cli.Command{
		Name:  "cluster",
		Usage: "how full the cluster's GPUs were: allocated, down, planned down, idle and reserved of the capacity (like sreport cluster utilization -T gres/gpu)",
		UsageText: "gpuacct report cluster [options]\n\n" +
			`GPU capacity over the window from Slurm's cluster and node events, down and
drained time, reservations, allocated and idle GPU-time, per cluster (and
per day, week or month), as sreport -T gres/gpu cluster utilization counts
them. ingest reads Slurm's side from sacctmgr (ingest.sacctmgr). Whole
hours, like sreport. See docs/utilization.md.

` + clusterExamples,
		Flags:  flags,
		Action: func(c *cli.Context) error { return runCluster(c, d) },
	}
}

func runCluster(c *cli.Context, d Deps) error {
	// bad is bad input to report cluster: one line, exit 2.
	bad := func(err error) error { return usage("report cluster", &report.BadInput{Err: err}) }
	if err := noArgs(c, "report cluster"); err != nil {
		return err
	}
	e, w, err := loadWindow(c, d, "report cluster")
	if err != nil {
		return err
	}
	p, err := timespec.ParsePeriod(c.String("period"))
	if err != nil {
		return bad(err)
	}
	o, err := e.output(c, d)
	if err != nil {
		return bad(err)
	}
	// As sreport does, an end after now is now before the rounding to
	// whole hours: the same --start and --end read the same hours.
	if w.End.After(e.now) {
		w.End = e.now
	}
	hw := report.HourWindow(w)
	if err := timespec.CheckBuckets(hw, p); err != nil {
		return bad(err)
	}
	db, s, err := e.openScoped(c, "report cluster", false)
	if err != nil {
		return err
	}
	defer db.Close()
	r := report.ClusterRequest{Window: hw, Period: p, Scope: s, Now: e.now}
	rows, err := db.ClusterUtilization(c.Context, r)
	if report.IsBadInput(err) {
		return usage("report cluster", err)
	}
	if err != nil {
		return fmt.Errorf("report cluster: %w", err)
	}
	return table.Write(d.Stdout, report.ClusterTable(r, rows, o.Units), o)
}
