package reportcmd

import (
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// JobCommand is `gpuacct job JOBID`.
func JobCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "one job's GPU usage, like seff/jobstats: per GPU utilization, memory, energy, idle time, notes",
		UsageText: `gpuacct job JOBID [options]

JOBID is 1234, 1234_7 (an array task) or 1234+1 (the run after the first
requeue; default: the latest run). When several clusters share the ledger,
the job is looked for on the local one (SLURM_CLUSTER_NAME, else
cluster.name), or on each when the local one is not among them: -M names it. Shows who, where and how long; per node
and GPU the mean and peak utilization, peak memory of total, energy and idle
time; a sparkline of utilization over the job; and what to change. Running
jobs show the latest samples.

Examples:
   gpuacct job 123456
   gpuacct job 123456_3 --json | jq '.gpus_detail[] | {uuid, util_mean_pct}'
   gpuacct job 123456 --db /tmp/acct.db
   gpuacct job 123456 -M gpu2                 # the job of that cluster, when several share the ledger`,
		Flags: append(append(cliwire.LedgerFlags(),
			&cli.BoolFlag{Name: "json", Usage: "JSON instead of text"},
			&cli.StringFlag{Name: "tz", Usage: "time zone of the times shown (report.tz)", EnvVars: []string{"GPUSUITE_TZ"}},
			&cli.StringFlag{Name: "teams-file", Usage: "team mapping file (report.teams)", EnvVars: []string{"GPUSUITE_TEAMS"}},
		), clusterFlagsSaying("the job's cluster, when several share the ledger. Default: the local one (SLURM_CLUSTER_NAME, else cluster.name), or every one when the local one is not in the ledger (an id two clusters have is then refused)",
			"look for the job on every cluster of the ledger (-M all); an id two clusters have is refused")...),
		Action: func(c *cli.Context) error {
			sp, err := jobArg(c, "job: give one JOBID (see 'gpuacct job --help')")
			if err != nil {
				return err
			}
			e, err := load(c, d)
			if err != nil {
				return err
			}
			m, err := teams.Load(e.cfg.Report.Teams)
			if err != nil {
				return err
			}
			det, ms, u, err := e.job(c, sp, true)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return report.WriteJobJSONResources(d.Stdout, det, m, "", ms, u)
			}
			width := d.Width()
			if width == 0 {
				width = 100
			}
			if err := report.WriteJobTextIn(d.Stdout, det, m, e.loc, width, i18n.ForEnv(d.Getenv)); err != nil {
				return err
			}
			if err := report.WriteJobResourcesText(d.Stdout, u); err != nil {
				return err
			}
			return report.WriteJobMessagesText(d.Stdout, ms, e.loc)
		},
	}
}
