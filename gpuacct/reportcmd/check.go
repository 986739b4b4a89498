package reportcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// checkCritical is the Nagios plugin exit code for CRITICAL; checkUnknown
// is UNKNOWN, which Nagios plugins use for bad options.
const (
	checkCritical = 2
	checkUnknown  = 3
)

// slurmReader reads Slurm's nodes and reservations within timeout.
type slurmReader func(ctx context.Context, timeout time.Duration) (slurmstate.State, error)

// nagios is check's exit with a plugin's code: CRITICAL and UNKNOWN are
// Nagios' words, not the usage and failure codes of other commands.
func nagios(code int, line string) error {
	return &cliwire.ExitError{Code: code, Err: errors.New(line)}
}

// CheckCommand is `gpuacct check`.
func CheckCommand(d Deps) *cli.Command {
	return checkCommand(d, func(ctx context.Context, timeout time.Duration) (slurmstate.State, error) {
		return slurmstate.Reader{Timeout: timeout, Now: d.Now}.Read(ctx)
	})
}

// checkCommand is check with Slurm read by slurm (tests give a fake).
func checkCommand(d Deps, slurm slurmReader) *cli.Command {
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
taken as decommissioned and left out. When several clusters share the
ledger, the nodes checked are the local cluster's (-M to choose, -M all).

The live board (board.live_dir and Slurm, as gpuacct status reads them)
adds its alerts as problems: a process outside its GPU's job or on a GPU
no job holds, a GPU allocated but idle for longer than --idle-alert, a
node whose agent snapshot is stale or missing. A live directory that does
not exist or cannot be read (the board not set up), Slurm unreachable and
skipped snapshot files are a WARNING line on stderr and do not change the
exit. --no-live leaves the live board out.

Examples:
   gpuacct check
   gpuacct check --stale 30m --lag 5m
   gpuacct check --idle-alert 2h
   gpuacct check --no-live
   */10 * * * * gpuacct check >/dev/null || mail -s "gpuacct" root   # crontab
   command[gpuacct]=/usr/bin/gpuacct check                           # nrpe.cfg`,
		// The defaults shown are the config's (cliwire.ConfigDefaults reads
		// each flag's key from its usage), not the flags' zeros.
		Flags: append(append(cliwire.LedgerFlags(),
			&cli.DurationFlag{Name: "stale", Usage: "a node may ship nothing this long (report.check_stale)", EnvVars: []string{"GPUSUITE_CHECK_STALE"}},
			&cli.DurationFlag{Name: "lag", Usage: "the last good ingest pass may be this old (report.check_lag)", EnvVars: []string{"GPUSUITE_CHECK_LAG"}},
			&cli.DurationFlag{Name: "forget", Usage: "leave out nodes silent this long, 0 for none (report.check_forget)", EnvVars: []string{"GPUSUITE_CHECK_FORGET"}},
			&cli.IntFlag{Name: "left-passes", Usage: "a file in incoming may outlive this many ingest passes, 0 to skip (report.check_left_passes)"},
			&cli.StringFlag{Name: "live-dir", Usage: "directory of the agents' live snapshots (board.live_dir)", EnvVars: []string{"GPUSUITE_LIVE_DIR"}},
			&cli.DurationFlag{Name: "idle-alert", Usage: "a GPU may stay allocated but idle this long (board.idle_alert)", EnvVars: []string{"GPUSUITE_IDLE_ALERT"}},
			&cli.BoolFlag{Name: "no-live", Usage: "leave out the live board's alerts (no snapshot read, Slurm not asked)"},
		), clusterFlagsSaying("check the nodes of these clusters of the ledger (all: every one). Default: the local one (SLURM_CLUSTER_NAME, else cluster.name), or every one when it is not in the ledger",
			"check the nodes of every cluster of the ledger (-M all)")...),
		// A stray argument is a usage error, exit 2, as an unknown option
		// is: the command line's syntax is every command's alike.
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			e, err := load(c, d)
			if err != nil {
				return nagios(checkCritical, "CRITICAL: "+err.Error())
			}
			o := report.CheckOptionsFrom(e.cfg, e.now)
			if c.IsSet("left-passes") {
				o.LeftPasses = c.Int("left-passes")
			}
			if o.LeftPasses < 0 {
				return nagios(checkUnknown, fmt.Sprintf("UNKNOWN: check: --left-passes %d is not a number of passes (0 to skip)", o.LeftPasses))
			}
			// Flags over the config file, as cliwire.SetStrings does for strings.
			for name, dst := range map[string]*time.Duration{"stale": &o.Stale, "lag": &o.Lag, "forget": &o.Forget, "idle-alert": &e.cfg.Board.IdleAlert.Duration} {
				if c.IsSet(name) {
					*dst = c.Duration(name)
				}
			}
			cliwire.SetStrings(c, map[string]*string{"live-dir": &e.cfg.Board.LiveDir})
			if ia := e.cfg.Board.IdleAlert.Duration; ia <= 0 {
				return nagios(checkUnknown, fmt.Sprintf("UNKNOWN: check: --idle-alert %s is not a positive duration such as 1h", ia))
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
					return nagios(checkUnknown, fmt.Sprintf("UNKNOWN: check: --%s %s is not %s", x.name, x.v, hint))
				}
			}
			db, err := e.open(c.Context)
			if err != nil {
				return nagios(checkCritical, "CRITICAL: "+err.Error())
			}
			defer db.Close()
			// A monitor must not turn UNKNOWN because a second cluster
			// began to ship: with no local cluster it checks them all.
			s, err := e.scope(c, db, true)
			if err != nil {
				return nagios(checkUnknown, "UNKNOWN: check: "+err.Error())
			}
			o.Clusters = s.Filter()
			problems, summary, err := db.Check(c.Context, o)
			if err != nil {
				return nagios(checkCritical, "CRITICAL: "+err.Error())
			}
			np, ns, err := db.CheckNotify(c.Context, e.now, report.NotifyStuckAfter)
			if err != nil {
				return nagios(checkCritical, "CRITICAL: "+err.Error())
			}
			if np != "" {
				problems = append(problems, np)
			}
			if ns != "" {
				summary += "; " + ns
			}
			if !c.Bool("no-live") {
				lp, ls, warnings := checkLive(c.Context, e.cfg.Board, slurm, o.Forget, e.now)
				for _, w := range warnings {
					fmt.Fprintf(d.Stderr, "WARNING: %s\n", w)
				}
				problems = append(problems, lp...)
				summary += "; " + ls
			}
			if len(problems) == 0 {
				fmt.Fprintf(d.Stdout, "OK: %s\n", summary)
				return nil
			}
			for _, p := range problems {
				fmt.Fprintf(d.Stdout, "CRITICAL: %s\n", p)
			}
			return &cliwire.ExitError{Code: checkCritical} // the lines are printed
		}),
	}
}

// checkLive reads the live board as gpuacct status does and returns its
// alerts as problems, a summary, and the warnings that do not fail the
// check: the board not set up, Slurm unreachable, files skipped, and
// stale nodes that are expected to be silent (down or powered down in
// Slurm, or silent longer than forget, 0: never, as the ledger's check).
func checkLive(ctx context.Context, cfg config.Board, slurm slurmReader, forget time.Duration, now time.Time) (problems []string, summary string, warnings []string) {
	// The board is optional: without the agents' live snapshots there is
	// nothing to alert on, and Slurm alone would make every node stale.
	if _, err := os.Stat(cfg.LiveDir); err != nil {
		why := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			why = fmt.Sprintf("%q does not exist", cfg.LiveDir)
		}
		return nil, "live board not set up", []string{fmt.Sprintf("live board not set up: %s (set board.live_dir or --live-dir to the agents' agent.live_dir, or --no-live)", why)}
	}
	lives, probs := board.Load(cfg.LiveDir, now, board.Limits{})
	if len(lives) == 0 && len(probs) > 0 && probs[0].File == "" {
		return nil, "live board unreadable", []string{"live board not read: " + probs[0].Err}
	}
	if len(probs) > 0 {
		warnings = append(warnings, fmt.Sprintf("%d live snapshot file(s) skipped, first %s", len(probs), probs[0]))
	}
	var state *slurmstate.State
	if st, err := slurm(ctx, cfg.SlurmTimeout.Duration); err != nil {
		warnings = append(warnings, fmt.Sprintf("Slurm unreachable (%v): nodes it knows without a snapshot are not checked", err))
	} else {
		state = &st
	}
	b := board.Build(lives, state, nil, now)
	gpus := 0
	for _, n := range b.Nodes {
		gpus += len(n.GPUs)
	}
	for _, a := range board.Alerts(&b, cfg.IdleAlert.Duration) {
		if a.Kind == board.AlertStale {
			if why := silentOK(a, state, forget, now); why != "" {
				warnings = append(warnings, "live: "+a.Text+": "+why)
				continue
			}
		}
		problems = append(problems, "live: "+a.Text)
	}
	return problems, fmt.Sprintf("live board: %d nodes, %d GPUs, %d alerts", len(b.Nodes), gpus, len(problems)), warnings
}

// silentOK says why a stale node is no alert ("" when it is one): Slurm
// has it down or powered down (its agent is expected to be silent), or
// its last snapshot is older than forget (decommissioned?).
func silentOK(a board.Alert, state *slurmstate.State, forget time.Duration, now time.Time) string {
	if state != nil {
		for _, n := range state.Nodes {
			if n.Name != a.Node {
				continue
			}
			if n.Condition == slurmstate.Down || n.NotResponding {
				return "Slurm has it down"
			}
			for _, f := range n.Flags {
				if strings.HasPrefix(f, "POWER") {
					return "Slurm has it " + strings.ToLower(strings.ReplaceAll(f, "_", " "))
				}
			}
		}
	}
	if forget > 0 && !a.Since.IsZero() && now.Sub(a.Since) > forget {
		return fmt.Sprintf("silent longer than report.check_forget (%s): decommissioned? remove its snapshot from board.live_dir", forget)
	}
	return ""
}
