package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// Batch is one write transaction. Every ledger change goes through it so
// that the rollups move with the facts under them, in the same commit.
type Batch struct {
	ctx  context.Context
	conn *sql.Conn
	tx   *sql.Tx
	now  time.Time
	// IdleUtil is the utilization (percent) below which a sample is idle.
	IdleUtil uint32

	st    map[string]*sql.Stmt
	nodes map[[2]string]int64
	gpus  map[string]gpuRow
	jobs  map[jobKey]int64
	dims  map[int64]Dims
	// prev is the last energy reading seen per GPU, for counter deltas.
	prev map[int64]energyReading
	use  map[useKey]*Delta
	// lastSample per (job row, node) in this batch.
	lastSample map[[2]int64]int64
	// seen is the newest record time per node in this batch (NodeSeen).
	seen map[int64]int64
	// models caches the GPU model of a node (nodeModel).
	models map[int64]string
	// allocs caches job allocations for the trust checks (jobAlloc),
	// newest each GPU's newest stored sample (newestSample).
	allocs map[allocKey]alloc
	newest map[int64]newest
	// Jobs whose events changed: their rerolls and summaries wait for the
	// end of the batch, so that a job's start and end events in one batch
	// move the rollups once.
	rerolls   map[int64]bool
	summaries map[int64]bool
	samples   sampleInserter
}

// gpuRow is a gpus row as stored.
type gpuRow struct {
	id, node         int64
	model            string
	idx, minor       int
	hasIdx, hasMinor bool
}

type jobKey struct {
	cluster string
	job     uint64
	restart int
}

type useKey struct {
	job, node, hour int64
}

type energyReading struct {
	tms int64
	mj  uint64
}

// Dims are the job attributes the rollups are keyed by.
type Dims struct {
	Cluster, User, Account, Partition string
	Ignored                           bool
}

// Delta is a change to one job on one node in one hour.
type Delta struct {
	AllocGPUs int64 // GPU-seconds
	Used      float64
	Idle      float64
	SampleS   float64
	EnergyMJ  int64
	Jobs      int64
}

func (d Delta) zero() bool {
	return d.AllocGPUs == 0 && d.Used == 0 && d.Idle == 0 && d.SampleS == 0 && d.EnergyMJ == 0 && d.Jobs == 0
}

func (d *Delta) add(e Delta) {
	d.AllocGPUs += e.AllocGPUs
	d.Used += e.Used
	d.Idle += e.Idle
	d.SampleS += e.SampleS
	d.EnergyMJ += e.EnergyMJ
	d.Jobs += e.Jobs
}

func (d Delta) neg() Delta {
	return Delta{-d.AllocGPUs, -d.Used, -d.Idle, -d.SampleS, -d.EnergyMJ, -d.Jobs}
}

// Begin starts a write transaction at time now.
func (s *Store) Begin(ctx context.Context, now time.Time) (*Batch, error) {
	// The batch holds its connection so that the sample inserts can use
	// the driver directly (sampleInserter), inside the same transaction.
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	return &Batch{
		ctx: ctx, conn: conn, tx: tx, now: now, IdleUtil: 1,
		models: map[int64]string{}, seen: map[int64]int64{}, rerolls: map[int64]bool{}, summaries: map[int64]bool{},
		st: map[string]*sql.Stmt{}, nodes: map[[2]string]int64{}, gpus: map[string]gpuRow{},
		jobs: map[jobKey]int64{}, dims: map[int64]Dims{}, prev: map[int64]energyReading{},
		use: map[useKey]*Delta{}, lastSample: map[[2]int64]int64{},
	}, nil
}

// Tx is the underlying transaction, for statements the batch lacks.
func (b *Batch) Tx() *sql.Tx { return b.tx }

// Commit flushes pending rollup changes and commits.
func (b *Batch) Commit() error {
	if err := b.settle(); err != nil {
		b.Rollback()
		return err
	}
	if err := b.flushUse(); err != nil {
		b.Rollback()
		return err
	}
	if err := b.flushSeen(); err != nil {
		b.Rollback()
		return err
	}
	b.closeStmts()
	err := b.tx.Commit()
	b.conn.Close()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Rollback abandons the batch.
func (b *Batch) Rollback() {
	b.closeStmts()
	_ = b.tx.Rollback()
	b.conn.Close()
}

func (b *Batch) closeStmts() {
	for _, s := range b.st {
		s.Close()
	}
	b.samples.close(b.conn)
}

// settle runs the rerolls and summaries that events left for the end of
// the batch, in a fixed order.
func (b *Batch) settle() error {
	rr := make([]int64, 0, len(b.rerolls))
	for j := range b.rerolls {
		rr = append(rr, j)
	}
	sort.Slice(rr, func(i, j int) bool { return rr[i] < rr[j] })
	for _, j := range rr {
		// Every node of the job: a start on a node with a lower id moves
		// the job's count (jobs = 1) there from the node that had it.
		nodes, err := b.jobNodes(j)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if err := b.reroll(j, n); err != nil {
				return err
			}
		}
		delete(b.rerolls, j)
	}
	js := make([]int64, 0, len(b.summaries))
	for j := range b.summaries {
		js = append(js, j)
	}
	sort.Slice(js, func(i, j int) bool { return js[i] < js[j] })
	for _, j := range js {
		if err := b.summarize(j); err != nil {
			return err
		}
		delete(b.summaries, j)
	}
	return nil
}

func (b *Batch) stmt(q string) (*sql.Stmt, error) {
	if s, ok := b.st[q]; ok {
		return s, nil
	}
	s, err := b.tx.PrepareContext(b.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", firstLine(q), err)
	}
	b.st[q] = s
	return s, nil
}

func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexByte(q, '\n'); i > 0 {
		q = q[:i]
	}
	return q
}

func (b *Batch) exec(q string, args ...any) (sql.Result, error) {
	s, err := b.stmt(q)
	if err != nil {
		return nil, err
	}
	r, err := s.ExecContext(b.ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", firstLine(q), err)
	}
	return r, nil
}

func (b *Batch) queryRow(q string, args ...any) (*sql.Row, error) {
	s, err := b.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.QueryRowContext(b.ctx, args...), nil
}

// Node returns the id of (cluster, node), creating it.
func (b *Batch) Node(cluster, node string) (int64, error) {
	k := [2]string{cluster, node}
	if id, ok := b.nodes[k]; ok {
		return id, nil
	}
	if _, err := b.exec(`INSERT INTO nodes(cluster, name) VALUES(?, ?) ON CONFLICT DO NOTHING`, cluster, node); err != nil {
		return 0, err
	}
	row, err := b.queryRow(`SELECT id FROM nodes WHERE cluster = ? AND name = ?`, cluster, node)
	if err != nil {
		return 0, err
	}
	var id int64
	if err := row.Scan(&id); err != nil {
		return 0, fmt.Errorf("node %s/%s: %w", cluster, node, err)
	}
	b.nodes[k] = id
	return id, nil
}

// NodeSeen records the newest record time of a node and when it was
// ingested; the batch writes it once per node when it commits.
func (b *Batch) NodeSeen(node int64, recordTime time.Time) error {
	t := recordTime.Unix()
	if old, ok := b.seen[node]; !ok || t > old {
		b.seen[node] = t
	}
	return nil
}

func (b *Batch) flushSeen() error {
	nodes := make([]int64, 0, len(b.seen))
	for n := range b.seen {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	for _, n := range nodes {
		if _, err := b.exec(`UPDATE nodes SET last_record = max(coalesce(last_record, 0), ?), last_ingest = ? WHERE id = ?`,
			b.seen[n], b.now.Unix(), n); err != nil {
			return err
		}
		delete(b.seen, n)
	}
	return nil
}

// GPU returns the id of a GPU UUID on node, creating it; model and minor
// fill in when first known.
func (b *Batch) GPU(uuid string, node int64, index *int, minor *int, model string) (int64, error) {
	// Known in this batch, and the upsert would change nothing.
	if g, ok := b.gpus[uuid]; ok && g.node == node && (model == "" || g.model == model) &&
		(minor == nil || (g.hasMinor && g.minor == *minor)) && (index == nil || (g.hasIdx && g.idx == *index)) {
		return g.id, nil
	}
	if _, err := b.exec(`INSERT INTO gpus(uuid, node_id, idx, minor, model) VALUES(?, ?, ?, ?, ?)
ON CONFLICT(uuid) DO UPDATE SET idx = coalesce(excluded.idx, idx), minor = coalesce(excluded.minor, minor),
 model = CASE WHEN excluded.model != '' THEN excluded.model ELSE model END`,
		uuid, node, intPtr(index), intPtr(minor), model); err != nil {
		return 0, err
	}
	clear(b.models) // a node's model may have changed
	row, err := b.queryRow(`SELECT id, node_id, model, idx, minor FROM gpus WHERE uuid = ?`, uuid)
	if err != nil {
		return 0, err
	}
	// A GPU is never moved to another node: checkSegment and checkEvent
	// refuse a UUID that another node reported (invariant 8).
	var g gpuRow
	var idx, mnr sql.NullInt64
	if err := row.Scan(&g.id, &g.node, &g.model, &idx, &mnr); err != nil {
		return 0, fmt.Errorf("gpu %s: %w", uuid, err)
	}
	g.idx, g.hasIdx = int(idx.Int64), idx.Valid
	g.minor, g.hasMinor = int(mnr.Int64), mnr.Valid
	b.gpus[uuid] = g
	return g.id, nil
}

func intPtr(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// Job returns the row id of a job run, creating a bare row (no dims yet)
// when the first thing seen of it is a sample or an aggregate.
func (b *Batch) Job(cluster string, job uint64, restart int) (int64, error) {
	k := jobKey{cluster, job, restart}
	if id, ok := b.jobs[k]; ok {
		return id, nil
	}
	if _, err := b.exec(`INSERT INTO jobs(cluster, job_id, restart) VALUES(?, ?, ?) ON CONFLICT DO NOTHING`, cluster, int64(job), restart); err != nil {
		return 0, err
	}
	row, err := b.queryRow(`SELECT id FROM jobs WHERE cluster = ? AND job_id = ? AND restart = ?`, cluster, int64(job), restart)
	if err != nil {
		return 0, err
	}
	var id int64
	if err := row.Scan(&id); err != nil {
		return 0, fmt.Errorf("job %s/%d/%d: %w", cluster, job, restart, err)
	}
	b.jobs[k] = id
	return id, nil
}

func (b *Batch) jobDims(job int64) (Dims, error) {
	if d, ok := b.dims[job]; ok {
		return d, nil
	}
	row, err := b.queryRow(`SELECT cluster, user, account, partition, ignored FROM jobs WHERE id = ?`, job)
	if err != nil {
		return Dims{}, err
	}
	var d Dims
	if err := row.Scan(&d.Cluster, &d.User, &d.Account, &d.Partition, &d.Ignored); err != nil {
		return Dims{}, fmt.Errorf("job row %d: %w", job, err)
	}
	b.dims[job] = d
	return d, nil
}

// nodeModel is the GPU model of a node's GPUs (” until one is known).
func (b *Batch) nodeModel(node int64) (string, error) {
	if m, ok := b.models[node]; ok {
		return m, nil
	}
	row, err := b.queryRow(`SELECT coalesce((SELECT model FROM gpus WHERE node_id = ? AND model != '' ORDER BY id LIMIT 1), '')`, node)
	if err != nil {
		return "", err
	}
	var m string
	if err := row.Scan(&m); err != nil {
		return "", fmt.Errorf("model of node %d: %w", node, err)
	}
	b.models[node] = m
	return m, nil
}

func (b *Batch) rollup(dims Dims, node int64, model string, hour int64, d Delta) error {
	if err := b.rollupHour(dims, node, model, hour, d); err != nil {
		return err
	}
	if err := b.rollupDay(dims, model, hour/24, d); err != nil {
		return err
	}
	return b.rollupMonth(dims, model, MonthOfDay(hour/24), d)
}

func (b *Batch) rollupHour(dims Dims, node int64, model string, hour int64, d Delta) error {
	_, err := b.exec(`INSERT INTO rollup_hourly(hour, cluster, user, account, partition, node_id, model, ignored,
 alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,
 idle_gpu_s = idle_gpu_s + excluded.idle_gpu_s, sample_s = sample_s + excluded.sample_s,
 energy_mj = energy_mj + excluded.energy_mj, jobs = jobs + excluded.jobs`,
		hour, dims.Cluster, dims.User, dims.Account, dims.Partition, node, model, dims.Ignored,
		d.AllocGPUs, d.Used, d.Idle, d.SampleS, d.EnergyMJ, d.Jobs)
	return err
}

func (b *Batch) rollupDay(dims Dims, model string, day int64, d Delta) error {
	return b.rollupPeriod("rollup_daily", "day", dims, model, day, d)
}

func (b *Batch) rollupMonth(dims Dims, model string, month int64, d Delta) error {
	return b.rollupPeriod("rollup_monthly", "month", dims, model, month, d)
}

// rollupPeriod adds d to the node-less rollup table keyed by key (a Unix
// day: the day itself, or the first of its month). table and key are
// constants of this file, never input.
func (b *Batch) rollupPeriod(table, key string, dims Dims, model string, at int64, d Delta) error {
	_, err := b.exec(`INSERT INTO `+table+`(`+key+`, cluster, user, account, partition, model, ignored,
 alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,
 idle_gpu_s = idle_gpu_s + excluded.idle_gpu_s, sample_s = sample_s + excluded.sample_s,
 energy_mj = energy_mj + excluded.energy_mj, jobs = jobs + excluded.jobs`,
		at, dims.Cluster, dims.User, dims.Account, dims.Partition, model, dims.Ignored,
		d.AllocGPUs, d.Used, d.Idle, d.SampleS, d.EnergyMJ, d.Jobs)
	return err
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
	s, err := b.stmt(`SELECT h.node_id, h.hour, h.alloc_gpu_s, h.used_gpu_s, h.idle_gpu_s, h.sample_s, h.energy_mj, h.jobs FROM job_hours h WHERE h.job = ?`)
	if err != nil {
		return err
	}
	rows, err := s.QueryContext(b.ctx, job)
	if err != nil {
		return fmt.Errorf("job hours of %d: %w", job, err)
	}
	type jh struct {
		node, hour int64
		d          Delta
	}
	var hs []jh
	for rows.Next() {
		var h jh
		if err := rows.Scan(&h.node, &h.hour, &h.d.AllocGPUs, &h.d.Used, &h.d.Idle, &h.d.SampleS, &h.d.EnergyMJ, &h.d.Jobs); err != nil {
			rows.Close()
			return fmt.Errorf("job hours of %d: %w", job, err)
		}
		hs = append(hs, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("job hours of %d: %w", job, err)
	}
	for _, h := range hs {
		model, err := b.nodeModel(h.node)
		if err != nil {
			return err
		}
		if err := b.rollup(old, h.node, model, h.hour, h.d.neg()); err != nil {
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
}

// hourly splits a span into per-hour deltas.
func (s span) hourly(sign int64, out map[int64]Delta) {
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
			d.AllocGPUs += sign * s.gpus * (hi - lo)
			out[h] = d
		}
	}
}

// reroll brings one job × node's allocation in the rollups up to date:
// it subtracts what was added before (r_*) and adds the current span
// (an open job counts up to now).
func (b *Batch) reroll(job, node int64) error {
	row, err := b.queryRow(`SELECT start, end, gpus, r_start, r_end, r_gpus,
 (SELECT min(node_id) FROM job_nodes o WHERE o.job = n.job AND o.start IS NOT NULL) = n.node_id
 FROM job_nodes n WHERE job = ? AND node_id = ?`, job, node)
	if err != nil {
		return err
	}
	var start, end, rs, re, rg sql.NullInt64
	var gpus int64
	var head sql.NullBool
	if err := row.Scan(&start, &end, &gpus, &rs, &re, &rg, &head); err != nil {
		return fmt.Errorf("job node %d/%d: %w", job, node, err)
	}
	old := span{start: rs.Int64, end: re.Int64, gpus: rg.Int64, valid: rs.Valid && re.Valid}
	nw := span{start: start.Int64, gpus: gpus, valid: start.Valid}
	if end.Valid {
		nw.end = end.Int64
	} else {
		nw.end = max(start.Int64, b.now.Unix())
	}
	// The job is counted once, in the hour it started, on its lowest
	// node id; r_gpus < 0 marks a span that carried the count.
	nw.countsJob = head.Valid && head.Bool
	old.countsJob = rg.Valid && rg.Int64 < 0
	if old.gpus < 0 {
		old.gpus = -old.gpus - 1
	}
	if old == nw {
		return nil
	}
	deltas := map[int64]Delta{}
	old.hourly(-1, deltas)
	nw.hourly(1, deltas)
	// Into the batch's pending figures: flushUse applies them with the
	// samples' at the end of the batch (or before a job's rollups move).
	for h, d := range deltas {
		b.addUse(useKey{job, node, h}, d)
	}
	var nrs, nre, nrg any
	if nw.valid {
		g := nw.gpus
		if nw.countsJob {
			g = -g - 1
		}
		nrs, nre, nrg = nw.start, nw.end, g
	}
	_, err = b.exec(`UPDATE job_nodes SET r_start = ?, r_end = ?, r_gpus = ? WHERE job = ? AND node_id = ?`, nrs, nre, nrg, job, node)
	return err
}

// jobNodes lists the nodes of a job.
func (b *Batch) jobNodes(job int64) ([]int64, error) {
	s, err := b.stmt(`SELECT node_id FROM job_nodes WHERE job = ? ORDER BY node_id`)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(b.ctx, job)
	if err != nil {
		return nil, fmt.Errorf("nodes of job %d: %w", job, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("nodes of job %d: %w", job, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// summarize recomputes a job's start, end, nodes, GPUs and state from its
// nodes.
func (b *Batch) summarize(job int64) error {
	_, err := b.exec(`UPDATE jobs SET
 start = (SELECT min(start) FROM job_nodes WHERE job = jobs.id),
 end = CASE WHEN EXISTS (SELECT 1 FROM job_nodes WHERE job = jobs.id AND (end IS NULL OR start IS NULL)) THEN NULL
            ELSE (SELECT max(end) FROM job_nodes WHERE job = jobs.id) END,
 nodes = coalesce((SELECT group_concat(name, ',') FROM (SELECT n.name FROM job_nodes jn JOIN nodes n ON n.id = jn.node_id WHERE jn.job = jobs.id ORDER BY n.name)), ''),
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

// Event stores one validated job start or end. A start is kept as first
// seen; an end replaces an estimated or sacct end.
func (b *Batch) Event(ev *record.Event) error {
	node, err := b.Node(ev.Cluster, ev.Node)
	if err != nil {
		return err
	}
	if err := b.checkEvent(ev, node); err != nil {
		return err
	}
	if err := b.NodeSeen(node, ev.Time); err != nil {
		return err
	}
	job, err := b.Job(ev.Cluster, ev.Job.ID, ev.Job.RestartCount)
	if err != nil {
		return err
	}
	old, err := b.jobDims(job)
	if err != nil {
		return err
	}
	j := ev.Job
	if _, err := b.exec(`UPDATE jobs SET
 user = CASE WHEN user = '' THEN ? ELSE user END,
 uid = coalesce(uid, ?), gid = coalesce(gid, ?),
 account = CASE WHEN account = '' THEN ? ELSE account END,
 team = CASE WHEN team = '' THEN ? ELSE team END,
 partition = CASE WHEN partition = '' THEN ? ELSE partition END,
 array_job_id = coalesce(array_job_id, ?), array_task_id = coalesce(array_task_id, ?)
 WHERE id = ?`,
		j.User, i64p(j.UID), i64p(j.GID), j.Account, j.Account, j.Partition, nz(j.ArrayJobID), i64p(j.ArrayTaskID), job); err != nil {
		return err
	}
	nd := old
	if nd.User == "" {
		nd.User = j.User
	}
	if nd.Account == "" {
		nd.Account = j.Account
	}
	if nd.Partition == "" {
		nd.Partition = j.Partition
	}
	if err := b.moveJob(job, old, nd); err != nil {
		return err
	}
	model := ""
	for _, g := range ev.GPUs {
		if g.Model != "" {
			model = g.Model
			break
		}
	}
	quality := strings.Join(ev.Quality, "; ")
	t := ev.Time.Unix()
	switch ev.Kind {
	case record.JobStart:
		// A start estimated from the end or the samples gives way to the
		// prolog's.
		if _, err := b.exec(`INSERT INTO job_nodes(job, node_id, gpus, model, start, start_source, quality) VALUES(?, ?, ?, ?, ?, 'prolog', ?)
ON CONFLICT DO UPDATE SET start = CASE WHEN start IS NULL OR start_estimated = 1 THEN excluded.start ELSE start END,
 gpus = CASE WHEN start IS NULL OR start_estimated = 1 THEN excluded.gpus ELSE gpus END,
 start_source = CASE WHEN start IS NULL OR start_estimated = 1 THEN 'prolog' ELSE start_source END, start_estimated = 0,
 model = CASE WHEN model = '' THEN excluded.model ELSE model END,
 quality = CASE WHEN quality = '' THEN excluded.quality WHEN excluded.quality = '' THEN quality ELSE quality || '; ' || excluded.quality END`,
			job, node, len(j.GPUs), model, t, quality); err != nil {
			return err
		}
	case record.JobEnd:
		var code, sig any
		if j.Exit != nil {
			code, sig = j.Exit.Code, j.Exit.Signal
		}
		// An end without a start: the end stands in for the start
		// (start_estimated) until Slurm or the first sample says better.
		if _, err := b.exec(`INSERT INTO job_nodes(job, node_id, gpus, model, start, start_estimated, start_source, end, end_source, exit_code, exit_signal, quality)
 VALUES(?, ?, ?, ?, ?, 1, 'end', ?, 'epilog', ?, ?, ?)
ON CONFLICT DO UPDATE SET
 end = CASE WHEN end IS NULL OR end_source != 'epilog' THEN excluded.end ELSE end END,
 exit_code = CASE WHEN end IS NULL OR end_source != 'epilog' THEN excluded.exit_code ELSE exit_code END,
 exit_signal = CASE WHEN end IS NULL OR end_source != 'epilog' THEN excluded.exit_signal ELSE exit_signal END,
 end_estimated = 0, end_source = 'epilog',
 gpus = CASE WHEN gpus = 0 THEN excluded.gpus ELSE gpus END,
 model = CASE WHEN model = '' THEN excluded.model ELSE model END,
 quality = CASE WHEN quality = '' THEN excluded.quality WHEN excluded.quality = '' THEN quality ELSE quality || '; ' || excluded.quality END`,
			job, node, len(j.GPUs), model, t, t, code, sig, quality); err != nil {
			return err
		}
	default:
		return fmt.Errorf("event %s: kind %q", ev.Key, ev.Kind)
	}
	for _, g := range ev.GPUs {
		if g.UUID == "" {
			continue
		}
		gid, err := b.GPU(g.UUID, node, g.Index, &g.Minor, g.Model)
		if err != nil {
			return err
		}
		col := "energy_start_mj"
		if ev.Kind == record.JobEnd {
			col = "energy_end_mj"
		}
		var e any
		if g.EnergyMJ != nil {
			e = int64(*g.EnergyMJ)
		}
		if _, err := b.exec(`INSERT INTO job_gpus(job, gpu_id, node_id, minor, `+col+`) VALUES(?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET minor = excluded.minor, `+col+` = coalesce(`+col+`, excluded.`+col+`)`, job, gid, node, g.Minor, e); err != nil {
			return err
		}
	}
	b.rerolls[job] = true
	b.summaries[job] = true
	clear(b.allocs)
	return nil
}

func i64p(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func nz(v uint64) any {
	if v == 0 {
		return nil
	}
	return int64(v)
}

// Segment stores one validated segment's samples and returns how many
// were new (a sample already stored is skipped, and counted nowhere).
func (b *Batch) Segment(h *record.SegmentHeader, samples []record.Sample) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	node, err := b.Node(h.Cluster, h.Node)
	if err != nil {
		return 0, err
	}
	chk, err := b.checkSegment(h, node, samples)
	if err != nil {
		return 0, err
	}
	intervalMS := int64(h.Interval*1000 + 0.5)
	rows := make([]sampleRow, len(samples))
	deltas := make([]*int64, len(samples))
	// Rows go in in order, in runs: a run ends where an energy delta must
	// look at the stored samples, so that it sees the ones before it.
	flushed := 0
	flush := func(upTo int) error {
		if upTo > flushed {
			if err := b.samples.insert(b.ctx, b.conn, rows[flushed:upTo]); err != nil {
				return err
			}
			flushed = upTo
		}
		return nil
	}
	for i := range samples {
		s := &samples[i]
		idx := s.Index
		gid, err := b.GPU(s.UUID, node, &idx, nil, "")
		if err != nil {
			return 0, err
		}
		tms := s.Time.UnixMilli()
		r := &rows[i]
		r.put(colGPU, gid)
		r.put(colT, tms)
		r.put(colInterval, intervalMS)
		if s.EnergyMJ != nil {
			if !b.prevCached(gid, tms) {
				if err := flush(i); err != nil {
					return 0, err
				}
			}
			deltas[i], err = b.energyDelta(gid, tms, *s.EnergyMJ, intervalMS)
			if err != nil {
				return 0, err
			}
		}
		foreign := int64(0)
		for _, p := range s.Procs {
			if p.Foreign {
				foreign++
			}
		}
		if len(s.Jobs) > 0 {
			j := s.Jobs[0]
			if j.Job != 0 {
				r.put(colJob, int64(j.Job))
			}
			if j.Restart != 0 {
				r.put(colRestart, int64(j.Restart))
			}
			if j.Idle {
				r.put(colIdle, int64(1))
			}
			if len(s.Jobs) > 1 || j.Share != 1 {
				data, err := json.Marshal(s.Jobs)
				if err != nil {
					return 0, fmt.Errorf("encode sample jobs: %w", err)
				}
				r.put(colJobs, string(data))
			}
		}
		putU32(r, colUtil, s.GPUUtil)
		putU32(r, colMemUtil, s.MemUtil)
		putU64(r, colMemUsed, s.MemUsedMiB)
		putU32(r, colPower, s.PowerMW)
		putU64(r, colEnergy, s.EnergyMJ)
		if deltas[i] != nil {
			r.put(colEnergyDelta, *deltas[i])
		}
		putU32(r, colTemp, s.TempC)
		putU32(r, colSMClock, s.SMClockMHz)
		putU64(r, colThrottle, s.Throttle)
		putU64(r, colECC, s.ECCErrors)
		putU64(r, colXID, s.XIDErrors)
		r.put(colProcs, int64(len(s.Procs)))
		r.put(colForeign, foreign)
		if len(s.Missing) > 0 {
			r.put(colMissing, strings.Join(s.Missing, "; "))
		}
	}
	if err := flush(len(rows)); err != nil {
		return 0, err
	}
	n := 0
	var newest time.Time
	for i := range samples {
		if !rows[i].isNew {
			continue
		}
		s := &samples[i]
		tms := s.Time.UnixMilli()
		b.stored(rows[i].vals[colGPU].(int64), tms, intervalMS, s.EnergyMJ)
		n++
		if s.Time.After(newest) {
			newest = s.Time
		}
		delta := deltas[i]
		for _, js := range s.Jobs {
			if js.Job == 0 {
				continue
			}
			job, err := b.Job(h.Cluster, js.Job, js.Restart)
			if err != nil {
				return n, err
			}
			// Only the part of the sample's window inside the job's
			// allocation on this node counts: used and idle never pass
			// allocated, per job and GPU.
			ms := clip(chk.win[i], chk.alloc[jobKey{h.Cluster, js.Job, js.Restart}])
			iv := float64(ms) / 1000
			d := Delta{SampleS: iv}
			if s.GPUUtil != nil {
				d.Used = float64(*s.GPUUtil) * iv / 100 * js.Share
			}
			if js.Idle {
				d.Idle = iv
			}
			if delta != nil {
				d.EnergyMJ = int64(float64(*delta)*js.Share*float64(ms)/float64(max(intervalMS, 1)) + 0.5)
			}
			b.addUse(useKey{job, node, tms / 3_600_000}, d)
			ls := [2]int64{job, node}
			if tms/1000 > b.lastSample[ls] {
				b.lastSample[ls] = tms / 1000
			}
		}
	}
	if n > 0 {
		if err := b.NodeSeen(node, newest); err != nil {
			return n, err
		}
	}
	return n, nil
}

func putU32(r *sampleRow, col int, p *uint32) {
	if p != nil {
		r.put(col, int64(*p))
	}
}

func putU64(r *sampleRow, col int, p *uint64) {
	if p != nil {
		r.put(col, int64(*p))
	}
}

// prevCached reports whether energyDelta can answer for (gid, tms) from
// the batch's memory, without reading stored samples.
func (b *Batch) prevCached(gid, tms int64) bool {
	p, ok := b.prev[gid]
	return ok && p.tms < tms
}

// energyDelta is the energy counter's increase since the GPU's previous
// reading; a counter that went down was reset (driver reload) and counts
// from 0. Without a previous reading close enough, the delta is unknown.
func (b *Batch) energyDelta(gid, tms int64, mj uint64, intervalMS int64) (*int64, error) {
	p, ok := b.prev[gid]
	if !ok || p.tms >= tms {
		row, err := b.queryRow(`SELECT t_ms, energy_mj FROM samples WHERE gpu_id = ? AND t_ms < ? AND energy_mj IS NOT NULL ORDER BY t_ms DESC LIMIT 1`, gid, tms)
		if err != nil {
			return nil, err
		}
		var t, e int64
		switch err := row.Scan(&t, &e); {
		case errors.Is(err, sql.ErrNoRows):
			b.prev[gid] = energyReading{tms, mj}
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("previous energy of gpu %d: %w", gid, err)
		}
		p = energyReading{t, uint64(e)}
	}
	b.prev[gid] = energyReading{tms, mj}
	if tms-p.tms > 3*max(intervalMS, 1000) {
		return nil, nil
	}
	var d int64
	if mj >= p.mj {
		d = int64(mj - p.mj)
	} else {
		d = int64(mj)
	}
	return &d, nil
}

func u32(p *uint32) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func u64(p *uint64) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func i64(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// addUse adds d to the batch's pending figures of one job × node × hour.
func (b *Batch) addUse(k useKey, d Delta) {
	p := b.use[k]
	if p == nil {
		p = &Delta{}
		b.use[k] = p
	}
	p.add(d)
}

// flushUse moves the batch's pending figures (samples, allocation) into
// the job hours, and their sums into the rollups and job totals: one
// statement per row touched, not per change.
func (b *Batch) flushUse() error {
	keys := make([]useKey, 0, len(b.use))
	for k := range b.use {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := keys[i], keys[j]
		if a.job != c.job {
			return a.job < c.job
		}
		if a.node != c.node {
			return a.node < c.node
		}
		return a.hour < c.hour
	})
	use := b.use
	b.use = map[useKey]*Delta{}
	type hourKey struct {
		dims       Dims
		node, hour int64
		model      string
	}
	type dayKey struct {
		dims  Dims
		day   int64
		model string
	}
	// Sums in first-seen order, so that a batch always writes the same.
	hourly, daily, monthly, totals := map[hourKey]*Delta{}, map[dayKey]*Delta{}, map[dayKey]*Delta{}, map[int64]*Delta{}
	var hours []hourKey
	var days, months []dayKey
	var jobs []int64
	for _, k := range keys {
		d := *use[k]
		if d.zero() {
			continue
		}
		dims, err := b.jobDims(k.job)
		if err != nil {
			return err
		}
		// The row's model is fixed when the row is made, so that a later
		// subtraction hits the same rollup row.
		model, err := b.nodeModel(k.node)
		if err != nil {
			return err
		}
		if _, err := b.exec(`INSERT INTO job_hours(job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,
 idle_gpu_s = idle_gpu_s + excluded.idle_gpu_s, sample_s = sample_s + excluded.sample_s,
 energy_mj = energy_mj + excluded.energy_mj, jobs = jobs + excluded.jobs`,
			k.job, k.node, k.hour, d.AllocGPUs, d.Used, d.Idle, d.SampleS, d.EnergyMJ, d.Jobs); err != nil {
			return err
		}
		hk := hourKey{dims, k.node, k.hour, model}
		if hourly[hk] == nil {
			hourly[hk] = &Delta{}
			hours = append(hours, hk)
		}
		hourly[hk].add(d)
		dk := dayKey{dims, k.hour / 24, model}
		if daily[dk] == nil {
			daily[dk] = &Delta{}
			days = append(days, dk)
		}
		daily[dk].add(d)
		// A month row is keyed as a day row, by its first day.
		mk := dayKey{dims, MonthOfDay(k.hour / 24), model}
		if monthly[mk] == nil {
			monthly[mk] = &Delta{}
			months = append(months, mk)
		}
		monthly[mk].add(d)
		if totals[k.job] == nil {
			totals[k.job] = &Delta{}
			jobs = append(jobs, k.job)
		}
		totals[k.job].add(d)
	}
	for _, k := range hours {
		if d := *hourly[k]; !d.zero() {
			if err := b.rollupHour(k.dims, k.node, k.model, k.hour, d); err != nil {
				return err
			}
		}
	}
	for _, k := range days {
		if d := *daily[k]; !d.zero() {
			if err := b.rollupDay(k.dims, k.model, k.day, d); err != nil {
				return err
			}
		}
	}
	for _, k := range months {
		if d := *monthly[k]; !d.zero() {
			if err := b.rollupMonth(k.dims, k.model, k.day, d); err != nil {
				return err
			}
		}
	}
	for _, j := range jobs {
		d := totals[j]
		if _, err := b.exec(`UPDATE jobs SET alloc_gpu_s = alloc_gpu_s + ?, used_gpu_s = used_gpu_s + ?, idle_gpu_s = idle_gpu_s + ?, energy_mj = energy_mj + ? WHERE id = ?`,
			d.AllocGPUs, d.Used, d.Idle, d.EnergyMJ, j); err != nil {
			return err
		}
	}
	for k, t := range b.lastSample {
		if _, err := b.exec(`UPDATE job_nodes SET last_sample = max(coalesce(last_sample, 0), ?) WHERE job = ? AND node_id = ?`, t, k[0], k[1]); err != nil {
			return err
		}
		delete(b.lastSample, k)
	}
	return nil
}

// JobGPU stores an agent aggregate unless a later one (higher seq) of the
// same key is already stored.
func (b *Batch) JobGPU(a *record.JobGPU) error {
	node, err := b.Node(a.Cluster, a.Node)
	if err != nil {
		return err
	}
	if err := b.checkJobGPU(a, node); err != nil {
		return err
	}
	idx := a.Index
	gid, err := b.GPU(a.UUID, node, &idx, nil, a.Model)
	if err != nil {
		return err
	}
	job, err := b.Job(a.Cluster, a.Job, a.RestartCount)
	if err != nil {
		return err
	}
	if err := b.fillDims(job, a.User, a.Account, a.Partition); err != nil {
		return err
	}
	q := ""
	if len(a.Quality) > 0 {
		data, err := json.Marshal(a.Quality)
		if err != nil {
			return fmt.Errorf("aggregate %s quality: %w", a.Key, err)
		}
		q = string(data)
	}
	_, err = b.exec(`INSERT INTO job_gpus(job, gpu_id, node_id, agg_seq, agg_final, first, last, samples, sample_s, util_s,
 util_max, mem_max_mib, mem_total_mib, energy_mj, idle_s, quality) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT DO UPDATE SET agg_seq = excluded.agg_seq, agg_final = excluded.agg_final, first = excluded.first, last = excluded.last,
 samples = excluded.samples, sample_s = excluded.sample_s, util_s = excluded.util_s, util_max = excluded.util_max,
 mem_max_mib = excluded.mem_max_mib, mem_total_mib = excluded.mem_total_mib, energy_mj = excluded.energy_mj,
 idle_s = excluded.idle_s, quality = excluded.quality
 WHERE agg_seq IS NULL OR agg_seq < excluded.agg_seq`,
		job, gid, node, int64(a.Seq), a.Final, a.First.Unix(), a.Last.Unix(), int64(a.Samples), a.SampleSeconds, a.UtilSeconds,
		a.UtilMax, int64(a.MemMaxMiB), nullZero(a.MemTotalMiB), int64(a.EnergyMJ), a.IdleSeconds, q)
	if err != nil {
		return err
	}
	return b.NodeSeen(node, a.Last)
}

func nullZero(v uint64) any {
	if v == 0 {
		return nil
	}
	return int64(v)
}

// ExtendOpen brings every open job's allocation up to now; run once per pass.
func (b *Batch) ExtendOpen() error {
	if err := b.settle(); err != nil {
		return err
	}
	s, err := b.stmt(`SELECT job, node_id FROM job_nodes WHERE end IS NULL AND start IS NOT NULL`)
	if err != nil {
		return err
	}
	rows, err := s.QueryContext(b.ctx)
	if err != nil {
		return fmt.Errorf("open jobs: %w", err)
	}
	var open [][2]int64
	for rows.Next() {
		var k [2]int64
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return fmt.Errorf("open jobs: %w", err)
		}
		open = append(open, k)
	}
	rows.Close()
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
}

// StaleOpen lists open jobs whose nodes have shown nothing since before.
func (b *Batch) StaleOpen(before time.Time) ([]OpenJob, error) {
	if err := b.settle(); err != nil {
		return nil, err
	}
	s, err := b.stmt(`SELECT j.id, j.cluster, j.job_id, j.restart, n.node_id, coalesce(n.last_sample, n.start)
 FROM job_nodes n JOIN jobs j ON j.id = n.job
 WHERE n.end IS NULL AND n.start IS NOT NULL AND coalesce(n.last_sample, n.start) < ? ORDER BY j.id`)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(b.ctx, before.Unix())
	if err != nil {
		return nil, fmt.Errorf("stale open jobs: %w", err)
	}
	defer rows.Close()
	var out []OpenJob
	for rows.Next() {
		var o OpenJob
		var node, seen, jid int64
		if err := rows.Scan(&o.Row, &o.Cluster, &jid, &o.Restart, &node, &seen); err != nil {
			return nil, fmt.Errorf("stale open jobs: %w", err)
		}
		o.JobID = uint64(jid)
		if n := len(out); n > 0 && out[n-1].Row == o.Row {
			out[n-1].Nodes = append(out[n-1].Nodes, node)
			if t := time.Unix(seen, 0); t.After(out[n-1].LastSeen) {
				out[n-1].LastSeen = t
			}
			continue
		}
		o.Nodes = []int64{node}
		o.LastSeen = time.Unix(seen, 0)
		out = append(out, o)
	}
	return out, rows.Err()
}

// CloseJob ends a job's open nodes at end. source is sacct (Slurm's own
// record) or last_sample (an estimate, flagged); state is Slurm's state
// when known. A later epilog end replaces either.
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
		if _, err := b.exec(`UPDATE job_nodes SET end = max(?, start), end_source = ?, end_estimated = ?, exit_code = coalesce(?, exit_code),
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

// PruneSamples deletes raw samples older than before, GPU by GPU (the
// primary key makes each a range delete), and returns how many went.
func (b *Batch) PruneSamples(before time.Time) (int64, error) {
	rows, err := b.tx.QueryContext(b.ctx, `SELECT id FROM gpus`)
	if err != nil {
		return 0, fmt.Errorf("list gpus: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list gpus: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	var n int64
	for _, id := range ids {
		r, err := b.exec(`DELETE FROM samples WHERE gpu_id = ? AND t_ms < ?`, id, before.UnixMilli())
		if err != nil {
			return n, err
		}
		k, _ := r.RowsAffected()
		n += k
	}
	return n, nil
}

// FileSeen reports whether the file node/name was ingested with this
// content (sha256 hex) already.
func (b *Batch) FileSeen(node, name, hash string) (bool, error) {
	row, err := b.queryRow(`SELECT count(*) FROM ingested_files WHERE node = ? AND name = ? AND sha256 = ?`, node, name, hash)
	if err != nil {
		return false, err
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return false, fmt.Errorf("look up %s/%s: %w", node, name, err)
	}
	return n > 0, nil
}

// FileIngested records that node/name was ingested in this batch.
func (b *Batch) FileIngested(node, name, hash string, size, records int) error {
	_, err := b.exec(`INSERT INTO ingested_files(node, name, sha256, size, records, at) VALUES(?, ?, ?, ?, ?, ?)
 ON CONFLICT DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, records = excluded.records, at = excluded.at`,
		node, name, hash, size, records, b.now.Unix())
	return err
}
