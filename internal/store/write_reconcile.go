package store

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"
)

// Unreconciled is a finished job run (every node has a start and an end)
// whose times were not yet taken from Slurm's accounting
// (jobs.sacct_checked = 0).
type Unreconciled struct {
	Row     int64
	Cluster string
	JobID   uint64
	Restart int
	// Start is the run's earliest start on any node; StartEstimated says
	// it is no prolog's or Slurm's (the start event never came).
	Start          time.Time
	StartEstimated bool
	End            time.Time
}

// Unreconciled lists up to limit finished job runs not yet reconciled with
// sacct whose row is before the given one (0: any), newest first: recent
// jobs are the ones read most, and a backlog (a ledger from before
// reconciliation, runs sacct does not know yet) is walked past by row.
func (b *Batch) Unreconciled(before int64, limit int) ([]Unreconciled, error) {
	if err := b.settle(); err != nil {
		return nil, err
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	s, err := b.stmt(`SELECT id, cluster, job_id, restart, start, start_estimated, end FROM jobs
 WHERE sacct_checked = 0 AND id < ? AND end IS NOT NULL AND start IS NOT NULL ORDER BY id DESC LIMIT ?`)
	if err != nil {
		return nil, err
	}
	rows, err := translateRows(s.QueryContext(b.ctx, before, limit))
	out, err := collect(rows, err, func(r batchRows, u *Unreconciled) error {
		var jid, start, end int64
		err := r.Scan(&u.Row, &u.Cluster, &jid, &u.Restart, &start, &u.StartEstimated, &end)
		u.JobID, u.Start, u.End = uint64(jid), time.Unix(start, 0), time.Unix(end, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("unreconciled jobs: %w", err)
	}
	return out, nil
}

// SlurmTimes is a job run as Slurm's accounting has it: the allocation's
// start and end (the same on every node), its state (lower case) and exit
// code and signal (nil: sacct gave none).
type SlurmTimes struct {
	Start, End time.Time
	State      string
	ExitCode   *int
	ExitSignal *int
	// Submit is when the run was queued; zero: sacct gave none, and the
	// job's submit stays as it was.
	Submit time.Time
}

// timesNote is the quality note of a job part whose times are Slurm's.
const timesNote = "times_from_sacct"

// Reconcile gives every node of a finished job run Slurm's start and end
// (start_source and end_source sacct, no longer estimated), its exit code
// and state, and marks the run reconciled. Each node's allocation and
// samples follow through reroll (job hours, rollups, job totals), so the
// correction reaches every figure; taking the same times again changes
// nothing. An end before the start is taken as the start.
func (b *Batch) Reconcile(row int64, t SlurmTimes) error {
	if err := b.settle(); err != nil {
		return err
	}
	clear(b.allocs)
	start, end := t.Start.Unix(), max(t.End.Unix(), t.Start.Unix())
	var code, sig any
	if t.ExitCode != nil {
		code = *t.ExitCode
	}
	if t.ExitSignal != nil {
		sig = *t.ExitSignal
	}
	if _, err := b.exec(`UPDATE job_nodes SET start = ?1, end = ?2, start_estimated = 0, start_source = 'sacct', end_estimated = 0, end_source = 'sacct',
 exit_code = coalesce(?3, exit_code), exit_signal = coalesce(?4, exit_signal),
 quality = CASE WHEN quality = '' THEN ?5 WHEN instr('; ' || quality || '; ', '; ' || ?5 || '; ') > 0 THEN quality ELSE quality || '; ' || ?5 END
 WHERE job = ?6`, start, end, code, sig, timesNote, row); err != nil {
		return fmt.Errorf("reconcile job row %d: %w", row, err)
	}
	spans, err := b.jobSpans([]int64{row})
	if err != nil {
		return err
	}
	for _, n := range spans[row] {
		if err := b.rerollSpan(row, n.node, n.span); err != nil {
			return fmt.Errorf("reconcile job row %d on node %d: %w", row, n.node, err)
		}
	}
	if err := b.summarize(row); err != nil {
		return err
	}
	var state any
	if s := strings.ToLower(strings.TrimSpace(t.State)); s != "" {
		state = s
	}
	var submit any
	if !t.Submit.IsZero() {
		submit = t.Submit.Unix()
	}
	if _, err := b.exec(`UPDATE jobs SET state = coalesce(?, state), submit = coalesce(?, submit), sacct_checked = 1 WHERE id = ?`, state, submit, row); err != nil {
		return fmt.Errorf("reconcile job row %d: %w", row, err)
	}
	delete(b.unchecked, row)
	return nil
}

// GiveUpReconcile marks a job run as never to be reconciled
// (sacct_checked = 2): sacct did not know it in time, and its hooks' times
// stay (end_source says whose).
func (b *Batch) GiveUpReconcile(row int64) error {
	if _, err := b.exec(`UPDATE jobs SET sacct_checked = 2 WHERE id = ? AND sacct_checked = 0`, row); err != nil {
		return fmt.Errorf("give up reconciling job row %d: %w", row, err)
	}
	delete(b.unchecked, row)
	return nil
}

// ReconcileCounts counts the finished job runs by sacct_checked: not yet
// reconciled, reconciled, given up: how far reconciliation has come.
func (b *Batch) ReconcileCounts() (waiting, done, gaveUp int64, err error) {
	row, err := b.queryRow(`SELECT coalesce(sum(CASE WHEN sacct_checked = 0 THEN 1 ELSE 0 END), 0),
 coalesce(sum(CASE WHEN sacct_checked = 1 THEN 1 ELSE 0 END), 0), coalesce(sum(CASE WHEN sacct_checked = 2 THEN 1 ELSE 0 END), 0)
 FROM jobs WHERE end IS NOT NULL`)
	if err != nil {
		return 0, 0, 0, err
	}
	var w, d, g sql.NullInt64
	if err := row.Scan(&w, &d, &g); err != nil {
		return 0, 0, 0, fmt.Errorf("count reconciled jobs: %w", err)
	}
	return w.Int64, d.Int64, g.Int64, nil
}
