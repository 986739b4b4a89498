package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// JobRows are the ids of the job rows a job spec names, as users type
// it: 1234 (every run, and every task when it is an array), 1234_7,
// 1234+1 (a restart); in cluster, any cluster when "".
func (b *Batch) JobRows(cluster, spec string) ([]int64, error) {
	q := `SELECT id FROM jobs WHERE `
	var args []any
	base, restart, hasRestart := strings.Cut(spec, "+")
	if a, t, ok := strings.Cut(base, "_"); ok {
		q += `array_job_id = ? AND array_task_id = ?`
		args = append(args, a, t)
	} else {
		q += `(job_id = ? OR array_job_id = ?)`
		args = append(args, base, base)
	}
	if hasRestart {
		q += ` AND restart = ?`
		args = append(args, restart)
	}
	if cluster != "" {
		q += ` AND cluster = ?`
		args = append(args, cluster)
	}
	rs, err := translateRows(b.tx.QueryContext(b.ctx, q+` ORDER BY id`, args...))
	out, err := collect(rs, err, func(r batchRows, id *int64) error { return r.Scan(id) })
	if err != nil {
		return nil, fmt.Errorf("find job %s: %w", spec, err)
	}
	return out, nil
}

// TaggedJob is a job row not ignored whose comment carries a tag.
type TaggedJob struct {
	Row   int64
	JobID int64
}

// Decision is an explicit decision on whether a job run counts: the
// request that carried it (a gpuacct ignore or unignore, or the
// dashboard's form), who asked and when.
type Decision struct {
	Ignored bool
	Reason  string
	Request string
	By      string
	At      time.Time
}

// DecideIgnored is SetIgnored on behalf of d's request, which the job
// run keeps as its last explicit decision, with who made it and when:
// the tag in its comment no longer decides it (TaggedJobs).
func (b *Batch) DecideIgnored(job int64, d Decision) error {
	if err := b.SetIgnored(job, d.Ignored, d.Reason); err != nil {
		return err
	}
	if _, err := b.exec(`UPDATE jobs SET ignore_request = ?, ignore_by = ?, ignore_at = ? WHERE id = ?`, d.Request, d.By, d.At.Unix(), job); err != nil {
		return fmt.Errorf("record the decision of %s on job row %d: %w", d.Request, job, err)
	}
	return nil
}

// LastDecision is the last explicit decision on job run row of cluster
// (Request "" when none was made); its Reason is the run's, set while
// it is ignored.
func (s *Ledger) LastDecision(ctx context.Context, cluster string, jobID int64, restart int) (Decision, error) {
	var d Decision
	var reason, request, by sql.NullString
	var at sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT ignored, ignore_reason, ignore_request, ignore_by, ignore_at FROM jobs WHERE cluster = ? AND job_id = ? AND restart = ?`,
		cluster, jobID, restart).Scan(&d.Ignored, &reason, &request, &by, &at)
	if err != nil {
		return Decision{}, fmt.Errorf("last decision on job %d+%d: %w", jobID, restart, translate(err))
	}
	d.Reason, d.Request, d.By = reason.String, request.String, by.String
	if at.Valid {
		d.At = time.Unix(at.Int64, 0).UTC()
	}
	return d, nil
}

// MarkIgnoreDecided records request as the last explicit decision of job
// row job without changing whether it is ignored: for decisions made
// before the ledger kept them (DecideIgnored).
func (b *Batch) MarkIgnoreDecided(job int64, request string) error {
	if _, err := b.exec(`UPDATE jobs SET ignore_request = ? WHERE id = ?`, request, job); err != nil {
		return fmt.Errorf("record the decision of %s on job row %d: %w", request, job, err)
	}
	return nil
}

// TaggedJobs are the job rows not ignored whose comment carries tag and
// that no request decided (DecideIgnored).
func (b *Batch) TaggedJobs(tag string) ([]TaggedJob, error) {
	rs, err := translateRows(b.tx.QueryContext(b.ctx, `SELECT id, job_id FROM jobs WHERE ignored = 0 AND ignore_request IS NULL AND comment IS NOT NULL AND instr(comment, ?) > 0 ORDER BY id`, tag))
	out, err := collect(rs, err, func(r batchRows, j *TaggedJob) error { return r.Scan(&j.Row, &j.JobID) })
	if err != nil {
		return nil, fmt.Errorf("find jobs tagged %q: %w", tag, err)
	}
	return out, nil
}
