package report

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
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

// CheckOptionsFrom is the options the configuration gives (report.check_*,
// ingest.incoming, ingest.quarantine, ingest.grace); gpuacct check and the
// web's health answer share it.
func CheckOptionsFrom(cfg config.Config, now time.Time) CheckOptions {
	return CheckOptions{Now: now, Stale: cfg.Report.CheckStale.Duration, Lag: cfg.Report.CheckLag.Duration, Forget: cfg.Report.CheckForget.Duration,
		Incoming: cfg.Ingest.Incoming, Quarantine: cfg.Ingest.Quarantine, LeftPasses: cfg.Report.CheckLeftPasses, Grace: cfg.Ingest.Grace.Duration}
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
