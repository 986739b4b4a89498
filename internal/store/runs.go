package store

import (
	"database/sql"
	"fmt"
	"time"
)

// LaterRunStart is the earliest known start of a later run (a higher
// restart count) of the open job's job id, on any node: a requeued run
// ended by then, whatever its node failed to send.
func (b *Batch) LaterRunStart(o OpenJob) (time.Time, bool, error) {
	row, err := b.queryRow(`SELECT min(n.start) FROM jobs j JOIN job_nodes n ON n.job = j.id
 WHERE j.cluster = ? AND j.job_id = ? AND j.restart > ? AND n.start IS NOT NULL AND n.start_estimated = 0`,
		o.Cluster, int64(o.JobID), o.Restart)
	if err != nil {
		return time.Time{}, false, err
	}
	var t sql.NullInt64
	if err := row.Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("later runs of job %d: %w", o.JobID, err)
	}
	if !t.Valid {
		return time.Time{}, false, nil
	}
	return time.Unix(t.Int64, 0), true, nil
}

// RunStart is a job run's earliest start that a prolog (or Slurm)
// recorded, on any node; zero if none.
func (b *Batch) RunStart(job int64) (time.Time, error) {
	row, err := b.queryRow(`SELECT min(start) FROM job_nodes WHERE job = ? AND start_estimated = 0`, job)
	if err != nil {
		return time.Time{}, err
	}
	var t sql.NullInt64
	if err := row.Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("start of job row %d: %w", job, err)
	}
	if !t.Valid {
		return time.Time{}, nil
	}
	return time.Unix(t.Int64, 0), nil
}
