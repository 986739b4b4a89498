package store

import "context"

// The jobs and gpus exports with what one energy per job and GPU needs
// (report's splitEnergy): the export's columns (report.ExportColumns, as
// ExportJobsIn and ExportGPUsIn give them), then, for jobs, the run's Σ
// power × seconds over its GPUs (joules, nil without power readings),
// the sum of its GPUs' own counter differences and how many GPUs lack
// one, and its billing-unit-seconds; for gpus, the run's energy (the ledger's counter deltas) and the
// GPU's power × seconds. The window's parameters follow the metric's
// name.
const (
	exportJobsEnergy = `SELECT ` + exportJobsCols + `,
 (SELECT sum(m.value_s) FROM job_gpu_metrics m WHERE m.job = jobs.id AND m.name = ?),
 (SELECT CAST(sum(` + gpuCounterMJ + `) AS INTEGER) FROM job_gpus jg WHERE jg.job = jobs.id),
 (SELECT count(*) FROM job_gpus jg WHERE jg.job = jobs.id AND coalesce(` + gpuCounterMJ + `, 0) <= 0), billing FROM jobs` + exportJobsWhere
	// gpuCounterMJ is a job GPU's own counter difference from the job's
	// start to its end: the agent's aggregate, else the hooks' readings.
	// (Its sum is cast: PostgreSQL sums bigints as numeric.)
	gpuCounterMJ     = `coalesce(jg.energy_mj, CASE WHEN jg.energy_end_mj >= jg.energy_start_mj THEN jg.energy_end_mj - jg.energy_start_mj END)`
	exportGPUsEnergy = `SELECT ` + exportGPUsColsHead + `, ` + gpuCounterMJ + `, ` + exportGPUsColsTail + `, j.energy_mj,
 (SELECT m.value_s FROM job_gpu_metrics m WHERE m.job = j.id AND m.gpu_id = jg.gpu_id AND m.name = ?)` + exportGPUsFrom
)

// ExportJobsEnergyIn is ExportJobsIn with each run's power × seconds
// (joules, nil when no sample had a power reading), its GPUs' counter
// differences' sum (nil: none) and the number of its GPUs without one.
func (s *Ledger) ExportJobsEnergyIn(ctx context.Context, clusters []string, from, to int64, fn func(vals []any) error) error {
	return s.exportIn(ctx, fn, exportJobsEnergy, "cluster", clusters, exportJobsOrder, PowerMetric, to, from)
}

// ExportGPUsEnergyIn is ExportGPUsIn, each GPU's energy_mj its own
// counter difference (the agent's aggregate, else the hooks' readings),
// then the run's energy and the GPU's power × seconds (joules, nil when
// none). A run's GPUs come one after another.
func (s *Ledger) ExportGPUsEnergyIn(ctx context.Context, clusters []string, from, to int64, fn func(vals []any) error) error {
	return s.exportIn(ctx, fn, exportGPUsEnergy, "j.cluster", clusters, exportGPUsOrder, PowerMetric, to, from)
}
