package store

import (
	"fmt"
	"time"
)

// UncheckedJob is a job run whose comment and array ids were not yet
// looked up in Slurm's accounting (jobs.details_checked = 0).
type UncheckedJob struct {
	Row int64
	// Cluster is the job's cluster, which sacct is asked about (-M).
	Cluster string
	JobID   uint64
	// Seen is the job's end, else start, else submit; zero when none.
	Seen time.Time
}

// JobDetails is what sacct knows of a job and slurmd does not tell the
// hooks. ArrayJobID is 0 for a job outside an array.
type JobDetails struct {
	Comment string
	// QOS is the job's Slurm QOS: what the idle rule's exempt_qos reads.
	QOS         string
	ArrayJobID  uint64
	ArrayTaskID int64
}

// UncheckedJobs lists up to limit job runs not yet looked up whose row is
// after the given one, in row order, so that a pass can walk a backlog
// past jobs that stay unchecked.
func (b *Batch) UncheckedJobs(after int64, limit int) ([]UncheckedJob, error) {
	s, err := b.stmt(`SELECT id, cluster, job_id, coalesce(end, start, submit, 0) FROM jobs WHERE details_checked = 0 AND id > ? ORDER BY id LIMIT ?`)
	if err != nil {
		return nil, err
	}
	rows, err := translateRows(s.QueryContext(b.ctx, after, limit))
	out, err := collect(rows, err, func(r batchRows, u *UncheckedJob) error {
		var jid, seen int64
		err := r.Scan(&u.Row, &u.Cluster, &jid, &seen)
		u.JobID = uint64(jid)
		if seen > 0 {
			u.Seen = time.Unix(seen, 0)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("unchecked jobs: %w", err)
	}
	return out, nil
}

// SetJobDetails records what sacct said of a job run and marks it checked.
// Comment and array ids are no rollup dimension, so rollups stay as they
// are; array ids the hooks already recorded are kept.
func (b *Batch) SetJobDetails(row int64, d JobDetails) error {
	var comment, qos, arrJob, arrTask any
	if d.Comment != "" {
		comment = d.Comment
	}
	if d.QOS != "" {
		qos = d.QOS
	}
	if d.ArrayJobID != 0 {
		arrJob, arrTask = int64(d.ArrayJobID), d.ArrayTaskID
	}
	_, err := b.exec(`UPDATE jobs SET comment = ?, qos = ?, array_job_id = coalesce(array_job_id, ?), array_task_id = coalesce(array_task_id, ?), details_checked = 1 WHERE id = ?`,
		comment, qos, arrJob, arrTask, row)
	if err != nil {
		return fmt.Errorf("job details of row %d: %w", row, err)
	}
	return nil
}

// GiveUpJobDetails marks a job run as never to be looked up again
// (details_checked = 2): sacct did not know it in time.
func (b *Batch) GiveUpJobDetails(row int64) error {
	if _, err := b.exec(`UPDATE jobs SET details_checked = 2 WHERE id = ? AND details_checked = 0`, row); err != nil {
		return fmt.Errorf("give up job details of row %d: %w", row, err)
	}
	return nil
}
