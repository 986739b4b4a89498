package report

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// checkCritical is the Nagios plugin exit code for CRITICAL; checkUnknown
// is UNKNOWN, which Nagios plugins use for bad options.
const (
	checkCritical = 2
	checkUnknown  = 3
)

// CheckOptions are gpuacct check's thresholds.
type CheckOptions struct {
	Now time.Time
	// Stale: a node that shipped nothing for this long is a problem.
	Stale time.Duration
	// Lag: the last successful ingest pass must be newer than this.
	Lag time.Duration
	// Forget: nodes silent for longer are decommissioned (0: never).
	Forget time.Duration
	// Incoming and Quarantine are ingest's directories ("" skips them);
	// a file in incoming older than the start of the LeftPasses-th most
	// recent pass is a problem (0: not checked).
	Incoming, Quarantine string
	LeftPasses           int
	// Grace is ingest.grace: a file younger than that may be waiting
	// for its job's event (ingest defers it), so it is not yet stuck.
	Grace time.Duration
}

// Check returns one line per problem (none: healthy) and a one-line
// summary of what was checked.
func (d *DB) Check(ctx context.Context, o CheckOptions) (problems []string, summary string, err error) {
	now := o.Now.Unix()
	rows, err := d.db.QueryContext(ctx, `SELECT id, last_record, last_ingest FROM nodes`)
	if err != nil {
		return nil, "", d.wrap(err)
	}
	nodes, stale := 0, 0
	for rows.Next() {
		var id int64
		var rec, ing sql.NullInt64
		if err := rows.Scan(&id, &rec, &ing); err != nil {
			rows.Close()
			return nil, "", d.wrap(err)
		}
		// What a node shipped is dated by its newest record, not by when
		// ingest got round to it.
		last := rec.Int64
		if !rec.Valid {
			last = ing.Int64
		}
		age := time.Duration(now-last) * time.Second
		if o.Forget > 0 && age > o.Forget {
			continue
		}
		nodes++
		if age > o.Stale {
			stale++
			problems = append(problems, fmt.Sprintf("node %s: no data for %s (last record %s)", d.nodeNames[id], roundAge(age),
				time.Unix(rec.Int64, 0).UTC().Format(time.RFC3339)))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", d.wrap(err)
	}
	sort.Strings(problems)
	var lastOK sql.NullInt64
	if err := d.db.QueryRowContext(ctx, `SELECT max(finished) FROM passes WHERE ok = 1`).Scan(&lastOK); err != nil {
		return nil, "", d.wrap(err)
	}
	switch {
	case !lastOK.Valid:
		problems = append(problems, "ingest: no successful pass recorded (is gpuacct serve running?)")
	case time.Duration(now-lastOK.Int64)*time.Second > o.Lag:
		problems = append(problems, fmt.Sprintf("ingest: last successful pass %s ago (limit %s): is gpuacct serve running?",
			roundAge(time.Duration(now-lastOK.Int64)*time.Second), o.Lag))
	}
	var started int64
	var finished sql.NullInt64
	var ok bool
	var perr sql.NullString
	err = d.db.QueryRowContext(ctx, `SELECT started, finished, ok, error FROM passes ORDER BY id DESC LIMIT 1`).Scan(&started, &finished, &ok, &perr)
	switch {
	case err == sql.ErrNoRows:
	case err != nil:
		return nil, "", d.wrap(err)
	case !ok && finished.Valid:
		msg := strings.TrimSpace(perr.String)
		if msg == "" {
			msg = "no error recorded"
		}
		problems = append(problems, fmt.Sprintf("ingest: last pass at %s failed: %s", time.Unix(started, 0).UTC().Format(time.RFC3339), firstLine(msg)))
	}
	age := "never"
	if lastOK.Valid {
		age = roundAge(time.Duration(now-lastOK.Int64)*time.Second).String() + " ago"
	}
	fp, fs, err := d.checkFiles(ctx, o)
	if err != nil {
		return nil, "", err
	}
	problems = append(problems, fp...)
	summary = fmt.Sprintf("%d nodes, %d silent over %s; last good ingest pass %s; %s", nodes, stale, o.Stale, age, fs)
	return problems, summary, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func roundAge(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

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
		Flags: []cli.Flag{dbFlag(),
			&cli.DurationFlag{Name: "stale", Usage: "a node may ship nothing this long (report.check_stale)", EnvVars: []string{"GPUSUITE_CHECK_STALE"}},
			&cli.DurationFlag{Name: "lag", Usage: "the last good ingest pass may be this old (report.check_lag)", EnvVars: []string{"GPUSUITE_CHECK_LAG"}},
			&cli.DurationFlag{Name: "forget", Usage: "leave out nodes silent this long, 0 for none (report.check_forget)", EnvVars: []string{"GPUSUITE_CHECK_FORGET"}},
			&cli.IntFlag{Name: "left-passes", Usage: "a file in incoming may outlive this many ingest passes, 0 to skip (report.check_left_passes)"},
		},
		Action: func(c *cli.Context) error {
			e, err := load(c, d)
			if err != nil {
				return cli.Exit("CRITICAL: "+err.Error(), checkCritical)
			}
			o := CheckOptions{Now: e.now, Stale: e.cfg.Report.CheckStale.Duration, Lag: e.cfg.Report.CheckLag.Duration, Forget: e.cfg.Report.CheckForget.Duration,
				Incoming: e.cfg.Ingest.Incoming, Quarantine: e.cfg.Ingest.Quarantine, LeftPasses: e.cfg.Report.CheckLeftPasses, Grace: e.cfg.Ingest.Grace.Duration}
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
