package store

import (
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Dims are the job attributes the rollups are keyed by.
type Dims struct {
	Cluster, User, Account, Partition string
	Ignored                           bool
}

// Usage is the figures the ledger keeps of GPU use: a change to one job
// on one node in one hour (job_hours), the rollups' sums of them, and
// what a report adds up (report.Usage is this type).
type Usage struct {
	AllocS   int64   // allocated GPU-seconds
	UsedS    float64 // used GPU-seconds
	IdleS    float64 // idle GPU-seconds
	SampleS  float64 // GPU-seconds covered by samples
	EnergyMJ int64
	Jobs     int64 // jobs started
	// Billing is billing-unit-seconds (float64, the scale of AllocS):
	// Slurm's billing TRES of the job × seconds, shared among its nodes
	// by GPUs; 0 where the site has no weights. docs/budgets.md.
	Billing float64
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.AllocS += o.AllocS
	u.UsedS += o.UsedS
	u.IdleS += o.IdleS
	u.SampleS += o.SampleS
	u.EnergyMJ += o.EnergyMJ
	u.Jobs += o.Jobs
	u.Billing += o.Billing
}

// Neg is -u: figures taken back (a job's rollups moved, a span's hours
// subtracted from its months).
func (u Usage) Neg() Usage {
	return Usage{-u.AllocS, -u.UsedS, -u.IdleS, -u.SampleS, -u.EnergyMJ, -u.Jobs, -u.Billing}
}

// values are a row's key values, then u's figures: addUsageSQL's order.
func (u Usage) values(key ...any) []any {
	return append(key, u.AllocS, u.UsedS, u.IdleS, u.SampleS, u.EnergyMJ, u.Jobs, u.Billing)
}

// addUsageSQL adds a row's figures (Usage.values) to table, whose rows
// the columns keyCols name: job_hours and the rollups.
func addUsageSQL(table, keyCols string) string {
	n := strings.Count(keyCols, ",") + 1 + 7
	return `INSERT INTO ` + table + `(` + keyCols + `, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing)
VALUES(` + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + `)
ON CONFLICT(` + keyCols + `) DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,
 idle_gpu_s = idle_gpu_s + excluded.idle_gpu_s, sample_s = sample_s + excluded.sample_s,
 energy_mj = energy_mj + excluded.energy_mj, jobs = jobs + excluded.jobs, billing = billing + excluded.billing`
}

func (b *Batch) rollup(dims Dims, node int64, model string, hour int64, d Usage) error {
	if err := b.rollupHour(dims, node, model, hour, d); err != nil {
		return err
	}
	if err := b.rollupNode(dims, node, model, hour, d); err != nil {
		return err
	}
	if err := b.rollupModel(dims, model, hour, d); err != nil {
		return err
	}
	if err := b.rollupHourSum(dims, model, hour, d); err != nil {
		return err
	}
	if err := b.rollupZone(dims, model, hour, d); err != nil {
		return err
	}
	if err := b.rollupDay(dims, model, hour/24, d); err != nil {
		return err
	}
	return b.rollupMonth(dims, model, MonthOfDay(hour/24), d)
}

func (b *Batch) rollupHour(dims Dims, node int64, model string, hour int64, d Usage) error {
	_, err := b.exec(rollupHourSQL(), rollupHourRow(dims, node, model, hour, d)...)
	return err
}

// rollupHourSQL adds a row's figures to rollup_hourly (rollupHourRow).
func rollupHourSQL() string {
	return addUsageSQL("rollup_hourly", "hour, cluster, user, account, partition, node_id, model, ignored")
}

func rollupHourRow(dims Dims, node int64, model string, hour int64, d Usage) []any {
	return d.values(hour, dims.Cluster, dims.User, dims.Account, dims.Partition, node, model, dims.Ignored)
}

func (b *Batch) rollupHourSum(dims Dims, model string, hour int64, d Usage) error {
	return b.rollupPeriod("rollup_hourly_sum", "hour", dims, model, hour, d)
}

func (b *Batch) rollupDay(dims Dims, model string, day int64, d Usage) error {
	return b.rollupPeriod("rollup_daily", "day", dims, model, day, d)
}

func (b *Batch) rollupMonth(dims Dims, model string, month int64, d Usage) error {
	return b.rollupPeriod("rollup_monthly", "month", dims, model, month, d)
}

// rollupPeriod adds d to the node-less rollup table keyed by key (a Unix
// hour, or a Unix day: the day itself, or the first of its month). table
// and key are constants of this file, never input.
func (b *Batch) rollupPeriod(table, key string, dims Dims, model string, at int64, d Usage) error {
	_, err := b.exec(rollupPeriodSQL(table, key), rollupPeriodRow(dims, model, at, d)...)
	return err
}

// rollupPeriodSQL adds a row's figures (rollupPeriodRow) to the node-less
// rollup table keyed by key.
func rollupPeriodSQL(table, key string) string {
	return addUsageSQL(table, key+", cluster, user, account, partition, model, ignored")
}

func rollupPeriodRow(dims Dims, model string, at int64, d Usage) []any {
	return d.values(at, dims.Cluster, dims.User, dims.Account, dims.Partition, model, dims.Ignored)
}

// MonthOfDay is the Unix day of the first day of the UTC month holding
// Unix day day: the key of rollup_monthly.
func MonthOfDay(day int64) int64 {
	y, m, _ := time.Unix(day*86400, 0).UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// moveJob moves a job's rollup contributions from its old dims to new
// ones (an event filled in the user, or the job was ignored).
func (b *Batch) moveJob(job int64, old, new Dims) error {
	if old == new {
		return nil
	}
	if err := b.flushUse(); err != nil {
		return err
	}
	if b.noHours[job] {
		b.dims[job] = new
		return nil
	}
	rows, err := b.query(`SELECT h.node_id, h.hour, h.alloc_gpu_s, h.used_gpu_s, h.idle_gpu_s, h.sample_s, h.energy_mj, h.jobs, h.billing FROM job_hours h WHERE h.job = ?`, job)
	type jh struct {
		node, hour int64
		d          Usage
	}
	hs, err := collect(rows, err, func(r batchRows, h *jh) error {
		return r.Scan(&h.node, &h.hour, &h.d.AllocS, &h.d.UsedS, &h.d.IdleS, &h.d.SampleS, &h.d.EnergyMJ, &h.d.Jobs, &h.d.Billing)
	})
	if err != nil {
		return fmt.Errorf("job hours of %d: %w", job, err)
	}
	models := map[int64]string{} // useModel's, once a node, not once an hour
	for _, h := range hs {
		model, ok := models[h.node]
		if !ok {
			if model, err = b.useModel(job, h.node); err != nil {
				return err
			}
			models[h.node] = model
		}
		if err := b.rollup(old, h.node, model, h.hour, h.d.Neg()); err != nil {
			return err
		}
		if err := b.rollup(new, h.node, model, h.hour, h.d); err != nil {
			return err
		}
	}
	b.dims[job] = new
	return nil
}

// fillDims sets a job's user, account and partition where still empty
// (a job first seen through a sample has none) and moves its rollups.
func (b *Batch) fillDims(job int64, user, account, partition string) error {
	old, err := b.jobDims(job)
	if err != nil {
		return err
	}
	nd := old
	if nd.User == "" {
		nd.User = user
	}
	if nd.Account == "" {
		nd.Account = account
	}
	if nd.Partition == "" {
		nd.Partition = partition
	}
	if nd == old {
		return nil
	}
	if err := b.moveJob(job, old, nd); err != nil {
		return err
	}
	_, err = b.exec(`UPDATE jobs SET user = ?, account = ?, team = CASE WHEN team = '' THEN ? ELSE team END, partition = ? WHERE id = ?`,
		nd.User, nd.Account, nd.Account, nd.Partition, job)
	return err
}

// SetIgnored marks a job run ignored (or not), moving its rollups so that
// reports can leave it out; it stays listable and reversible.
func (b *Batch) SetIgnored(job int64, ignored bool, reason string) error {
	if err := b.settle(); err != nil {
		return err
	}
	old, err := b.jobDims(job)
	if err != nil {
		return err
	}
	nd := old
	nd.Ignored = ignored
	if err := b.moveJob(job, old, nd); err != nil {
		return err
	}
	var r any
	if ignored {
		r = reason
	}
	_, err = b.exec(`UPDATE jobs SET ignored = ?, ignore_reason = ? WHERE id = ?`, ignored, r, job)
	return err
}

// span is what one job_nodes row adds to the rollups.
type span struct {
	start, end, gpus int64
	valid            bool
	countsJob        bool
	rate             float64 // billing units a second (Usage.Billing)
}

// hourly splits a span into per-hour deltas.
func (s span) hourly(sign int64, out map[int64]Usage) {
	if !s.valid || s.end < s.start {
		return
	}
	if s.countsJob {
		d := out[s.start/3600]
		d.Jobs += sign
		out[s.start/3600] = d
	}
	for h := s.start / 3600; h*3600 < s.end; h++ {
		lo, hi := max(s.start, h*3600), min(s.end, (h+1)*3600)
		if hi > lo {
			d := out[h]
			d.AllocS += sign * s.gpus * (hi - lo)
			d.Billing += float64(sign) * s.rate * float64(hi-lo)
			out[h] = d
		}
	}
}

// reroll brings one job × node's allocation in the rollups up to date:
// it subtracts what was added before (r_*) and adds the current span
// (an open job counts up to now).
func (b *Batch) reroll(job, node int64) error {
	row, err := b.queryRow(`SELECT `+nodeSpanCols+` FROM job_nodes n WHERE job = ? AND node_id = ?`, job, node)
	if err != nil {
		return err
	}
	var r nodeSpan
	if err := row.Scan(r.dest()...); err != nil {
		return fmt.Errorf("job node %d/%d: %w", job, node, err)
	}
	return b.rerollSpan(job, node, r)
}

// nodeSpan is a job_nodes row as reroll reads it: the allocation, the
// span the rollups hold (r_*), whether the node is the job's first with a
// start (head), and the samples' window.
type nodeSpan struct {
	start, end, rs, re, rg, slo, shi, last sql.NullInt64
	gpus                                   int64
	head                                   sql.NullBool
	est                                    bool
	rate, rBill                            sql.NullFloat64 // bill_rate, r_bill
}

// nodeSpanCols are nodeSpan's columns of job_nodes n, in dest's order.
const nodeSpanCols = `start, end, gpus, r_start, r_end, r_gpus,
 (SELECT min(node_id) FROM job_nodes o WHERE o.job = n.job AND o.start IS NOT NULL) = n.node_id,
 start_estimated, s_lo, s_hi, last_sample, bill_rate, r_bill`

func (r *nodeSpan) dest() []any {
	return []any{&r.start, &r.end, &r.gpus, &r.rs, &r.re, &r.rg, &r.head, &r.est, &r.slo, &r.shi, &r.last, &r.rate, &r.rBill}
}

// jobSpans reads the nodeSpans of every node of jobs, in node order, in
// one query per maxJobsAsked jobs (settle rerolls each job's nodes; one
// read a job and one a node was two round trips each on PostgreSQL). A
// reroll changes its own node's row only, so rows read before the
// rerolls of the jobs before them are still theirs.
func (b *Batch) jobSpans(jobs []int64) (map[int64][]jobNodeSpan, error) {
	out := make(map[int64][]jobNodeSpan, len(jobs))
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), maxJobsAsked)]
		jobs = jobs[len(chunk):]
		var q strings.Builder
		var args []any
		q.WriteString(`SELECT n.job, n.node_id, ` + nodeSpanCols + ` FROM job_nodes n WHERE 1 = 1`)
		inList(&q, &args, "n.job", chunk)
		q.WriteString(` ORDER BY n.job, n.node_id`)
		rows, err := b.query(q.String(), args...)
		err = eachRow(rows, err, func(r batchRows) error {
			var js jobNodeSpan
			var job int64
			if err := r.Scan(append([]any{&job, &js.node}, js.span.dest()...)...); err != nil {
				return err
			}
			out[job] = append(out[job], js)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("nodes of %d jobs: %w", len(chunk), err)
		}
	}
	return out, nil
}

// maxJobsAsked bounds the jobs of one jobSpans query.
const maxJobsAsked = 500

type jobNodeSpan struct {
	node int64
	span nodeSpan
}

// rerollSpan is reroll of the node's row r.
func (b *Batch) rerollSpan(job, node int64, r nodeSpan) error {
	var err error
	// The samples follow the allocation: where its start or end moved
	// (not an open job's extension, whose window has no end), they are
	// counted again against it.
	var gone [][2]int64
	if w := sampleWindow(r.start, r.end, r.est); r.slo.Valid && r.shi.Valid && (w.lo != r.slo.Int64 || w.hi != r.shi.Int64) {
		if gone, err = b.recount(job, node, alloc{lo: r.slo.Int64, hi: r.shi.Int64}, w); err != nil {
			return err
		}
		if _, err := b.exec(`UPDATE job_nodes SET s_lo = ?, s_hi = ? WHERE job = ? AND node_id = ?`, w.lo, w.hi, job, node); err != nil {
			return err
		}
		clear(b.allocs)
	}
	old := span{start: r.rs.Int64, end: r.re.Int64, gpus: r.rg.Int64, valid: r.rs.Valid && r.re.Valid, rate: r.rBill.Float64}
	nw := span{start: r.start.Int64, gpus: r.gpus, valid: r.start.Valid, rate: r.rate.Float64}
	if !r.rate.Valid && nw.valid {
		if nw.rate, err = b.estimateRate(job, node, r.start.Int64, r.gpus); err != nil {
			return err
		}
	}
	if r.end.Valid {
		nw.end = r.end.Int64
	} else {
		// An open job counts up to now, and at least to the end of its
		// newest sample's window (taken a moment before the pass, it
		// stands for the seconds after it): its samples are counted
		// whole while it runs, and so never pass what it was allocated.
		covered, err := b.sampledTo(job, node, max(r.last.Int64, b.lastSample[[2]int64{job, node}]))
		if err != nil {
			return err
		}
		nw.end = max(r.start.Int64, b.now.Unix(), covered)
	}
	// The job is counted once, in the hour it started, on its lowest
	// node id; r_gpus < 0 marks a span that carried the count.
	nw.countsJob = r.head.Valid && r.head.Bool
	old.countsJob = r.rg.Valid && r.rg.Int64 < 0
	if old.gpus < 0 {
		old.gpus = -old.gpus - 1
	}
	if old == nw {
		return b.clampPruned(job, node, gone)
	}
	deltas := map[int64]Usage{}
	old.hourly(-1, deltas)
	nw.hourly(1, deltas)
	// Into the batch's pending figures: flushUse applies them with the
	// samples' at the end of the batch (or before a job's rollups move).
	for h, d := range deltas {
		b.addUse(useKey{job, node, h}, d)
	}
	var nrs, nre, nrg, nrb any
	if nw.valid {
		g := nw.gpus
		if nw.countsJob {
			g = -g - 1
		}
		nrs, nre, nrg, nrb = nw.start, nw.end, g, nw.rate
	}
	if _, err := b.exec(`UPDATE job_nodes SET r_start = ?, r_end = ?, r_gpus = ?, r_bill = ? WHERE job = ? AND node_id = ?`, nrs, nre, nrg, nrb, job, node); err != nil {
		return err
	}
	return b.clampPruned(job, node, gone)
}

// summarize recomputes a job's start, end, nodes, GPUs and state from its
// nodes.
func (b *Batch) summarize(job int64) error {
	// The job's node names, sorted: SQLite's group_concat keeps the order
	// of its input, PostgreSQL's string_agg needs its own ORDER BY.
	names := `(SELECT group_concat(name, ',') FROM (SELECT n.name FROM job_nodes jn JOIN nodes n ON n.id = jn.node_id WHERE jn.job = jobs.id ORDER BY n.name) AS job_names)`
	if b.postgres() {
		names = `(SELECT string_agg(n.name, ',' ORDER BY n.name) FROM job_nodes jn JOIN nodes n ON n.id = jn.node_id WHERE jn.job = jobs.id)`
	}
	_, err := b.exec(`UPDATE jobs SET
 start = (SELECT min(start) FROM job_nodes WHERE job = jobs.id),
 end = CASE WHEN EXISTS (SELECT 1 FROM job_nodes WHERE job = jobs.id AND (end IS NULL OR start IS NULL)) THEN NULL
            ELSE (SELECT max(end) FROM job_nodes WHERE job = jobs.id) END,
 nodes = coalesce(`+names+`, ''),
 gpus = coalesce((SELECT sum(gpus) FROM job_nodes WHERE job = jobs.id), 0),
 end_estimated = coalesce((SELECT max(end_estimated) FROM job_nodes WHERE job = jobs.id), 0),
 start_estimated = coalesce((SELECT max(start_estimated) FROM job_nodes WHERE job = jobs.id), 0),
 end_source = (SELECT end_source FROM job_nodes WHERE job = jobs.id AND end IS NOT NULL ORDER BY end_estimated DESC, end DESC LIMIT 1),
 exit_code = (SELECT max(exit_code) FROM job_nodes WHERE job = jobs.id),
 exit_signal = (SELECT max(exit_signal) FROM job_nodes WHERE job = jobs.id)
 WHERE id = ?`, job)
	if err != nil {
		return err
	}
	_, err = b.exec(`UPDATE jobs SET state = CASE
 WHEN end IS NULL THEN 'running'
 WHEN end_estimated = 1 THEN 'unknown'
 WHEN end_source = 'sacct' AND state NOT IN ('running', 'unknown') THEN state
 WHEN coalesce(exit_signal, 0) != 0 THEN 'cancelled'
 WHEN coalesce(exit_code, 0) != 0 THEN 'failed'
 ELSE 'completed' END WHERE id = ?`, job)
	return err
}

// sampledTo is the end, in whole Unix seconds rounded up, of the windows
// of the job's samples on node taken in second last (its newest), 0 if
// none. The samples of that one second are read, by the (gpu, time) key.
func (b *Batch) sampledTo(job, node, last int64) (int64, error) {
	if last <= 0 {
		return 0, nil
	}
	var jobID, restart int64
	row, err := b.queryRow(`SELECT job_id, restart FROM jobs WHERE id = ?`, job)
	if err != nil {
		return 0, err
	}
	if err := row.Scan(&jobID, &restart); err != nil {
		return 0, fmt.Errorf("newest sample of job %d on node %d: %w", job, node, err)
	}
	gids, err := b.nodeGPUs(node)
	if err != nil {
		return 0, fmt.Errorf("newest sample of job %d on node %d: %w", job, node, err)
	}
	var end sql.NullInt64
	for _, gid := range gids {
		err := b.eachSample(gid, last*1000, (last+1)*1000, func(r *sampleRow) error {
			j, _ := r.num(colJob)
			rs, _ := r.num(colRestart)
			_, shared := r.text(colJobs)
			if shared || j == jobID && rs == restart {
				e := r.ints[colT] + r.ints[colInterval]
				if !end.Valid || e > end.Int64 {
					end = sql.NullInt64{Int64: e, Valid: true}
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("newest sample of job %d on node %d: %w", job, node, err)
		}
	}
	return (end.Int64 + 999) / 1000, nil
}
