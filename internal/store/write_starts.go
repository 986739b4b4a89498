package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// NoStart is a job run's part on one node whose start event never came:
// its end stands in for the start (start_source 'end') until Slurm or the
// node's first sample of the job says better.
type NoStart struct {
	Row     int64
	Cluster string
	JobID   uint64
	Restart int
	Node    int64
	End     time.Time
	Source  string // start_source: end, or retry's
}

// NoStarts lists up to limit parts of jobs whose start is still the end's
// stand-in, then those whose start_source is retry and that ended at or
// after since (to be asked again).
func (b *Batch) NoStarts(limit int, retry string, since time.Time) ([]NoStart, error) {
	if err := b.settle(); err != nil {
		return nil, err
	}
	s, err := b.stmt(`SELECT j.id, j.cluster, j.job_id, j.restart, n.node_id, n.end, n.start_source FROM job_nodes n JOIN jobs j ON j.id = n.job
 WHERE n.start_estimated = 1 AND (n.start_source = 'end' OR n.start_source = ? AND n.end >= ?)
 ORDER BY n.start_source = 'end' DESC, j.id, n.node_id LIMIT ?`)
	if err != nil {
		return nil, err
	}
	rows, err := translateRows(s.QueryContext(b.ctx, retry, since.Unix(), limit))
	out, err := collect(rows, err, func(r batchRows, n *NoStart) error {
		var jid int64
		var end sql.NullInt64
		err := r.Scan(&n.Row, &n.Cluster, &jid, &n.Restart, &n.Node, &end, &n.Source)
		n.JobID, n.End = uint64(jid), time.Unix(end.Int64, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jobs without a start: %w", err)
	}
	return out, nil
}

// FirstSample is the time of the node's first stored sample of the job
// run (job id and restart count: a shared GPU's jobs column holds
// record.JobShare's JSON, "job" then "restart"), if any: looked up in the
// first hour of the job with sampled time (job_hours), so that it reads
// one hour of samples, not all.
func (b *Batch) FirstSample(n NoStart) (time.Time, bool, error) {
	if err := b.flushUse(); err != nil {
		return time.Time{}, false, err
	}
	what := fmt.Sprintf("first sample of job %d", n.JobID)
	hour, err := b.queryNullInt(what, `SELECT min(hour) FROM job_hours WHERE job = ? AND node_id = ? AND sample_s > 0`, n.Row, n.Node)
	if err != nil {
		return time.Time{}, false, err
	}
	if !hour.Valid {
		return time.Time{}, false, nil
	}
	gids, err := b.nodeGPUs(n.Node)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", what, err)
	}
	var t sql.NullInt64
	mark := fmt.Sprintf(`"job":%d,"restart":%d,`, n.JobID, n.Restart)
	for _, gid := range gids {
		err := b.eachSample(gid, hour.Int64*3_600_000, (hour.Int64+1)*3_600_000, func(r *sampleRow) error {
			j, _ := r.num(colJob)
			rs, _ := r.num(colRestart)
			js, _ := r.text(colJobs)
			if j == int64(n.JobID) && rs == int64(n.Restart) || strings.Contains(js, mark) {
				if tm := r.ints[colT]; !t.Valid || tm < t.Int64 {
					t = sql.NullInt64{Int64: tm, Valid: true}
				}
				return errStopSamples
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopSamples) {
			return time.Time{}, false, fmt.Errorf("%s: %w", what, err)
		}
	}
	if !t.Valid {
		// Pruned already: the hour is what is left.
		return time.Unix(hour.Int64*3600, 0), true, nil
	}
	return time.UnixMilli(t.Int64), true, nil
}

// queryNullInt reads the one nullable integer q answers (an aggregate's);
// a failed read is an error of what.
func (b *Batch) queryNullInt(what, q string, args ...any) (sql.NullInt64, error) {
	var v sql.NullInt64
	row, err := b.queryRow(q, args...)
	if err != nil {
		return v, err
	}
	if err := row.Scan(&v); err != nil {
		return v, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// SetStart gives a job part whose start never came a better one: from
// sacct (Slurm's record, no longer estimated) or from its first sample
// (still estimated). A start after the end is taken as the end. The
// quality note start_from_SOURCE is added once.
func (b *Batch) SetStart(n NoStart, start time.Time, source string) error {
	clear(b.allocs)
	est := 1
	if source == "sacct" {
		est = 0
	}
	if _, err := b.exec(`UPDATE job_nodes SET start = min(?1, coalesce(end, ?1)), start_estimated = ?2, start_source = ?3,
 quality = CASE WHEN quality = '' THEN ?4 WHEN instr('; ' || quality || '; ', '; ' || ?4 || '; ') > 0 THEN quality ELSE quality || '; ' || ?4 END
 WHERE job = ?5 AND node_id = ?6 AND start_estimated = 1`,
		start.Unix(), est, source, "start_from_"+source, n.Row, n.Node); err != nil {
		return err
	}
	if err := b.reroll(n.Row, n.Node); err != nil {
		return err
	}
	return b.summarize(n.Row)
}

// EstimatedStarts counts the job runs whose start is an estimate (no
// start event, and Slurm did not say): for gpuacct check.
func (s *Ledger) EstimatedStarts(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(DISTINCT job) FROM job_nodes WHERE start_estimated = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count estimated starts: %w", translate(err))
	}
	return n, nil
}
