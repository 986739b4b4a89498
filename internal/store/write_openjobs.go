package store

import (
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// ExtendOpen brings every open job's allocation up to now; run once per pass.
func (b *Batch) ExtendOpen() error {
	if err := b.settle(); err != nil {
		return err
	}
	s, err := b.stmt(`SELECT job, node_id FROM job_nodes WHERE end IS NULL AND start IS NOT NULL`)
	if err != nil {
		return err
	}
	// The rows are read whole and closed before the first reroll. A step
	// that fails past the first row is the rows' error, which collect
	// returns: else a bad page would leave the rest of the open jobs
	// unextended, silently.
	rows, err := translateRows(s.QueryContext(b.ctx))
	open, err := collect(rows, err, func(r batchRows, k *[2]int64) error { return r.Scan(&k[0], &k[1]) })
	if err != nil {
		return fmt.Errorf("open jobs: %w", err)
	}
	for _, k := range open {
		if err := b.reroll(k[0], k[1]); err != nil {
			return err
		}
	}
	return nil
}

// OpenJob is a job run with a node that has a start and no end.
type OpenJob struct {
	Row      int64
	Cluster  string
	JobID    uint64
	Restart  int
	LastSeen time.Time // last sample, else start
	Nodes    []int64
	// Started is the run's earliest start a prolog (or Slurm) recorded,
	// on any node; zero if none.
	Started time.Time
	// LaterStart is the earliest recorded start of a later run (a higher
	// restart count) of the job id, on any node: a requeued run ended by
	// then, whatever its node failed to send. Zero if none.
	LaterStart time.Time
}

// StaleOpen lists open jobs whose nodes have shown nothing since before,
// with their starts and their later runs' (one query, not two a job).
func (b *Batch) StaleOpen(before time.Time) ([]OpenJob, error) {
	if err := b.settle(); err != nil {
		return nil, err
	}
	s, err := b.stmt(`SELECT j.id, j.cluster, j.job_id, j.restart, n.node_id, coalesce(n.last_sample, n.start),
 (SELECT min(m.start) FROM job_nodes m WHERE m.job = j.id AND m.start_estimated = 0),
 (SELECT min(m.start) FROM jobs k JOIN job_nodes m ON m.job = k.id
  WHERE k.cluster = j.cluster AND k.job_id = j.job_id AND k.restart > j.restart AND m.start IS NOT NULL AND m.start_estimated = 0)
 FROM job_nodes n JOIN jobs j ON j.id = n.job
 WHERE n.end IS NULL AND n.start IS NOT NULL AND coalesce(n.last_sample, n.start) < ? ORDER BY j.id`)
	if err != nil {
		return nil, err
	}
	rows, err := translateRows(s.QueryContext(b.ctx, before.Unix()))
	var out []OpenJob
	err = eachRow(rows, err, func(r batchRows) error {
		var o OpenJob
		var node, seen, jid int64
		var started, later sql.NullInt64
		if err := r.Scan(&o.Row, &o.Cluster, &jid, &o.Restart, &node, &seen, &started, &later); err != nil {
			return err
		}
		o.JobID = uint64(jid)
		if n := len(out); n > 0 && out[n-1].Row == o.Row {
			out[n-1].Nodes = append(out[n-1].Nodes, node)
			if t := time.Unix(seen, 0); t.After(out[n-1].LastSeen) {
				out[n-1].LastSeen = t
			}
			return nil
		}
		o.Nodes = []int64{node}
		o.LastSeen = time.Unix(seen, 0)
		if started.Valid {
			o.Started = time.Unix(started.Int64, 0)
		}
		if later.Valid {
			o.LaterStart = time.Unix(later.Int64, 0)
		}
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stale open jobs: %w", err)
	}
	return out, nil
}

// CloseJob ends a job's open nodes at end. source is sacct (Slurm's own
// record) or last_sample (an estimate, flagged); state is Slurm's state
// when known. A later epilog end replaces only a last_sample end: Slurm's
// own end stays (invariant 10).
func (b *Batch) CloseJob(o OpenJob, end time.Time, source, state string, exitCode *int) error {
	if err := b.settle(); err != nil {
		return err
	}
	clear(b.allocs)
	est := 0
	if source != "sacct" {
		est = 1
	}
	var code any
	if exitCode != nil {
		code = *exitCode
	}
	for _, node := range o.Nodes {
		// A node without a start keeps no end (two-argument max is NULL
		// there on SQLite; PostgreSQL's greatest would skip the NULL).
		if _, err := b.exec(`UPDATE job_nodes SET end = CASE WHEN start IS NULL THEN NULL ELSE max(?, start) END, end_source = ?, end_estimated = ?, exit_code = coalesce(?, exit_code),
 quality = CASE WHEN quality = '' THEN ? ELSE quality || '; ' || ? END WHERE job = ? AND node_id = ? AND end IS NULL`,
			end.Unix(), source, est, code, "end_from_"+source, "end_from_"+source, o.Row, node); err != nil {
			return err
		}
		if err := b.reroll(o.Row, node); err != nil {
			return err
		}
	}
	if err := b.summarize(o.Row); err != nil {
		return err
	}
	if state != "" {
		_, err := b.exec(`UPDATE jobs SET state = ? WHERE id = ? AND end IS NOT NULL`, strings.ToLower(state), o.Row)
		return err
	}
	return nil
}
