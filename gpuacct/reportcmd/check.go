package reportcmd

import (
	"fmt"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/report"
)

// checkCritical is the Nagios plugin exit code for CRITICAL; checkUnknown
// is UNKNOWN, which Nagios plugins use for bad options.
const (
	checkCritical = 2
	checkUnknown  = 3
)

// CheckCommand is `gpuacct check`.
func CheckCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "monitor for cron or Nagios: one line per problem and a non-zero exit",
		UsageText: `gpuacct check [options]

Problems: a node that shipped nothing for --stale; no successful ingest pass
for --lag; the last ingest pass failed; files in incoming that outlived
--left-passes passes (ingest cannot retire them); jobs with no start event;
the database unreadable. The summary counts the files in quarantine and
those quarantined and refused in the last 24 hours. Prints "OK: ..." and
exits 0 when healthy; else one line per problem on stdout and exit 2
(Nagios CRITICAL); a bad option exits 3 (UNKNOWN). Nodes silent for longer than --forget are
taken as decommissioned and left out.

Examples:
   gpuacct check
   gpuacct check --stale 30m --lag 5m
   */10 * * * * gpuacct check >/dev/null || mail -s "gpuacct" root   # crontab
   command[gpuacct]=/usr/bin/gpuacct check                           # nrpe.cfg`,
		// The defaults shown are the config's, which apply, not the flags' zeros.
		Flags: []cli.Flag{dbFlag(),
			&cli.DurationFlag{Name: "stale", Usage: "a node may ship nothing this long (report.check_stale)", EnvVars: []string{"GPUSUITE_CHECK_STALE"},
				DefaultText: config.Default().Report.CheckStale.Duration.String()},
			&cli.DurationFlag{Name: "lag", Usage: "the last good ingest pass may be this old (report.check_lag)", EnvVars: []string{"GPUSUITE_CHECK_LAG"},
				DefaultText: config.Default().Report.CheckLag.Duration.String()},
			&cli.DurationFlag{Name: "forget", Usage: "leave out nodes silent this long, 0 for none (report.check_forget)", EnvVars: []string{"GPUSUITE_CHECK_FORGET"},
				DefaultText: config.Default().Report.CheckForget.Duration.String()},
			&cli.IntFlag{Name: "left-passes", Usage: "a file in incoming may outlive this many ingest passes, 0 to skip (report.check_left_passes)",
				DefaultText: strconv.Itoa(config.Default().Report.CheckLeftPasses)},
		},
		Action: func(c *cli.Context) error {
			e, err := load(c, d)
			if err != nil {
				return cli.Exit("CRITICAL: "+err.Error(), checkCritical)
			}
			o := report.CheckOptionsFrom(e.cfg, e.now)
			if c.IsSet("left-passes") {
				o.LeftPasses = c.Int("left-passes")
			}
			if o.LeftPasses < 0 {
				return cli.Exit(fmt.Sprintf("UNKNOWN: check: --left-passes %d is not a number of passes (0 to skip)", o.LeftPasses), checkUnknown)
			}
			if c.IsSet("stale") {
				o.Stale = c.Duration("stale")
			}
			if c.IsSet("lag") {
				o.Lag = c.Duration("lag")
			}
			if c.IsSet("forget") {
				o.Forget = c.Duration("forget")
			}
			for _, x := range []struct {
				name string
				v    time.Duration
				zero bool
			}{{"stale", o.Stale, false}, {"lag", o.Lag, false}, {"forget", o.Forget, true}} {
				if x.v < 0 || (x.v == 0 && !x.zero) {
					hint := "a positive duration such as 15m"
					if x.zero {
						hint = "a positive duration such as 168h, or 0 to check every node"
					}
					return cli.Exit(fmt.Sprintf("UNKNOWN: check: --%s %s is not %s", x.name, x.v, hint), checkUnknown)
				}
			}
			db, err := e.open(c.Context)
			if err != nil {
				return cli.Exit("CRITICAL: "+err.Error(), checkCritical)
			}
			defer db.Close()
			problems, summary, err := db.Check(c.Context, o)
			if err != nil {
				return cli.Exit("CRITICAL: "+err.Error(), checkCritical)
			}
			if len(problems) == 0 {
				fmt.Fprintf(d.Stdout, "OK: %s\n", summary)
				return nil
			}
			for _, p := range problems {
				fmt.Fprintf(d.Stdout, "CRITICAL: %s\n", p)
			}
			return cli.Exit("", checkCritical)
		},
	}
}
