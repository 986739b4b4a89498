package store

import (
	"context"
	"database/sql"
	"time"
)

// JobMetricRow is one metric of a job run on one GPU (job_gpu_metrics):
// Mean = ValueS / Seconds over the samples counted; Unsupported, when
// set, is why the GPU cannot give it.
type JobMetricRow struct {
	GPUID       int64
	Name        string
	Samples     int64
	Seconds     float64
	ValueS      float64
	Peak        *float64
	Unsupported string
}

// JobMetrics lists a run's metrics (row: JobRow.Row) by GPU and name.
func (s *Ledger) JobMetrics(ctx context.Context, row int64) ([]JobMetricRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT gpu_id, name, samples, seconds, value_s, peak, coalesce(unsupported, '')
 FROM job_gpu_metrics WHERE job = ? ORDER BY gpu_id, name LIMIT 100000`, row)
	out, err := collect(rows, err, func(r batchRows, m *JobMetricRow) error {
		var peak sql.NullFloat64
		err := r.Scan(&m.GPUID, &m.Name, &m.Samples, &m.Seconds, &m.ValueS, &peak, &m.Unsupported)
		m.Peak = ptrFloat(peak)
		return err
	})
	return out, translate(err)
}

// GPUEventRow is one stored GPU event.
type GPUEventRow struct {
	GPUID      int64
	Time       time.Time
	Kind       string
	Code       int64
	Reason     string
	Suppressed int64
}

// JobGPUEvents lists, in time order, the events of the GPUs a run held
// (job_gpus), at most limit: those after its start on their node up to
// and including its end there (no end yet: every later one), and those
// up to JobEventGrace seconds after its end while no other run has taken
// the GPU. An Xid in the second a run ends and the next one on the GPU
// starts is the ending run's: it is what ended it.
func (s *Ledger) JobGPUEvents(ctx context.Context, row int64, limit int) ([]GPUEventRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT e.gpu_id, e.t_ns, e.kind, e.code, e.reason, e.suppressed
 FROM job_gpus jg JOIN job_nodes n ON n.job = jg.job AND n.node_id = jg.node_id
 JOIN gpu_events e ON e.gpu_id = jg.gpu_id AND e.t_ns > coalesce(n.start, n.end, 0) * 1000000000
  AND (n.end IS NULL OR e.t_ns <= n.end * 1000000000
   OR e.t_ns <= (n.end + ?) * 1000000000 AND NOT EXISTS (SELECT 1 FROM job_gpus o JOIN job_nodes m ON m.job = o.job AND m.node_id = o.node_id
    WHERE o.gpu_id = jg.gpu_id AND o.job <> jg.job AND m.start >= n.end AND m.start * 1000000000 < e.t_ns))
 WHERE jg.job = ? ORDER BY e.t_ns, e.gpu_id, e.kind LIMIT ?`, JobEventGrace, row, limit)
	out, err := collect(rows, err, func(r batchRows, e *GPUEventRow) error {
		var ns int64
		err := r.Scan(&e.GPUID, &ns, &e.Kind, &e.Code, &e.Reason, &e.Suppressed)
		e.Time = time.Unix(0, ns).UTC()
		return err
	})
	return out, translate(err)
}
