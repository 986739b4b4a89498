package store

import (
	"context"
	"database/sql"
	"strings"
)

// The exports' statements; their columns are report.ExportColumns, in
// that order (docs/reports.md; stable).
const (
	exportJobs     = `SELECT ` + exportJobsCols + ` FROM jobs` + exportJobsWhere
	exportJobsCols = `cluster, job_id, restart, array_job_id, array_task_id, user, account, partition, nodes, gpus, start, end, state,
 end_estimated, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, energy_mj`
	exportJobsWhere = `
 WHERE start IS NOT NULL AND start < ? AND (end IS NULL OR end > ?)`
	exportJobsOrder = ` ORDER BY start, id`
	// The gpus export's columns around its energy_mj, which the energy
	// variant (read_export_energy.go) takes otherwise.
	exportGPUs         = `SELECT ` + exportGPUsColsHead + `, jg.energy_mj, ` + exportGPUsColsTail + exportGPUsFrom
	exportGPUsColsHead = `j.cluster, j.job_id, j.restart, n.name, g.uuid, g.idx, g.model, jg.sample_s, jg.util_s, jg.util_max, jg.mem_max_mib,
 coalesce(jg.mem_total_mib, g.mem_total_mib)`
	exportGPUsColsTail = `jg.idle_s, jg.agg_final`
	exportGPUsFrom     = `
 FROM jobs j JOIN job_gpus jg ON jg.job = j.id JOIN gpus g ON g.id = jg.gpu_id JOIN nodes n ON n.id = jg.node_id
 WHERE j.start IS NOT NULL AND j.start < ? AND (j.end IS NULL OR j.end > ?)`
	exportGPUsOrder = ` ORDER BY j.start, j.id, n.name, g.idx NULLS FIRST`
)

// exportSampleCols are the samples export's stored columns, after node,
// uuid and index; job, restart and idle are 0 when absent, as the table
// of samples stored them.
func exportSampleCols() []int {
	return []int{colT, colInterval, colJob, colRestart, colIdle, colUtil, colMemUtil, colMemUsed, colPower, colEnergy, colTemp,
		colSMClock, colMissing, colMetrics}
}

// exportSampleVals fills vals with sample r's export row.
func exportSampleVals(vals []any, node string, g GPURow, r *sampleRow) []any {
	vals = append(vals[:0], node, g.UUID, g.index())
	for _, col := range exportSampleCols() {
		vals = append(vals, r.value(col))
	}
	return vals
}

// ExportJobsIn calls fn, by start, with each job run of clusters (none:
// all) that overlaps [from, to) (Unix seconds) as the jobs export's
// column values: nil, int64, float64, string or bool. The query picks the
// clusters, so the other clusters' rows are never read. vals is reused;
// an error from fn stops the read and is returned as it is.
func (s *Ledger) ExportJobsIn(ctx context.Context, clusters []string, from, to int64, fn func(vals []any) error) error {
	return s.exportIn(ctx, fn, exportJobs, "cluster", clusters, exportJobsOrder, to, from)
}

// ExportGPUsIn is ExportJobsIn for the runs' GPUs (the gpus export).
func (s *Ledger) ExportGPUsIn(ctx context.Context, clusters []string, from, to int64, fn func(vals []any) error) error {
	return s.exportIn(ctx, fn, exportGPUs, "j.cluster", clusters, exportGPUsOrder, to, from)
}

// exportIn is export of q (its window's args first) narrowed to clusters
// in col, then ordered by order.
func (s *Ledger) exportIn(ctx context.Context, fn func([]any) error, q, col string, clusters []string, order string, args ...any) error {
	var b strings.Builder
	b.WriteString(q)
	inList(&b, &args, col, clusters)
	b.WriteString(order)
	return s.export(ctx, fn, b.String(), args...)
}

// ExportSamples is ExportJobs for GPU g's samples in [fromMs, toMs),
// each row led by node, g's uuid and index (the samples export).
func (s *Ledger) ExportSamples(ctx context.Context, node string, g GPURow, fromMs, toMs int64, fn func(vals []any) error) error {
	var vals []any
	return s.eachSample(ctx, g.ID, fromMs, toMs, func(r *sampleRow) error {
		vals = exportSampleVals(vals, node, g, r)
		return fn(vals)
	})
}

// index is g's index as a sample row leads with it: nil when unknown.
func (g GPURow) index() any {
	if g.Index == nil {
		return nil
	}
	return *g.Index
}

func (s *Ledger) export(ctx context.Context, fn func([]any) error, q string, args ...any) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return translate(err)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return translate(err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return translate(rows.Err())
}

// GPURow is a GPU the ledger knows.
type GPURow struct {
	ID, NodeID int64
	UUID       string
	Index      *int64 // nil when the agent did not know it
}

// GPUs lists every GPU by node, index and uuid (one row a GPU: the
// cluster's size bounds it).
func (s *Ledger) GPUs(ctx context.Context) ([]GPURow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT g.id, g.node_id, g.uuid, g.idx FROM gpus g ORDER BY g.node_id, g.idx NULLS FIRST, g.uuid`)
	out, err := collect(rows, err, func(r batchRows, g *GPURow) error {
		var idx sql.NullInt64
		err := r.Scan(&g.ID, &g.NodeID, &g.UUID, &idx)
		g.Index = ptrInt(idx)
		return err
	})
	return out, translate(err)
}

// MetricNames lists the chosen metrics (not power_w) that a job run has
// figures of (row: JobRow.Row), or, with row 0, any job; sorted by name.
func (s *Ledger) MetricNames(ctx context.Context, row int64) ([]string, error) {
	q := `SELECT DISTINCT name FROM job_gpu_metrics WHERE unsupported IS NULL AND name <> ? ORDER BY name LIMIT 1000`
	args := []any{PowerMetric}
	if row != 0 {
		q = `SELECT DISTINCT name FROM job_gpu_metrics WHERE job = ? AND unsupported IS NULL AND name <> ? ORDER BY name LIMIT 1000`
		args = []any{row, PowerMetric}
	}
	return s.texts(ctx, q, args...)
}
