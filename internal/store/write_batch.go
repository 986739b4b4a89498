package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"
)

// Batch is one write transaction. Every ledger change goes through it so
// that the rollups move with the facts under them, in the same commit.
type Batch struct {
	ctx  context.Context
	conn *sql.Conn
	// give gives a PostgreSQL writer's connection back (pgEngine.take).
	give func()
	tx   *ledgerTx
	now  time.Time
	// IdleUtil is the utilization (percent) below which a sample is idle.
	IdleUtil uint32

	st    map[string]*ledgerStmt
	nodes map[[2]string]int64
	gpus  map[string]gpuRow
	jobs  map[jobKey]int64
	// shared: the pass's job ids from the batches before (ShareJobIDs)
	shared *JobIDs
	dims   map[int64]Dims
	// noHours are the jobs this batch made that have no job_hours rows
	// yet (flushUse writes the only ones): moveJob has none to move.
	noHours map[int64]bool
	// unchecked are the job runs the batch knows to wait for Slurm's
	// times (sacct_checked = 0): made by it, or read so (PostgreSQL).
	unchecked map[int64]bool
	// prev is the last energy reading seen per GPU, for counter deltas.
	prev map[int64]energyReading
	use  map[useKey]*Usage
	// touched is every job hour flushed from use (TouchedHours).
	touched map[useKey]struct{}
	// lastSample per (job row, node) in this batch.
	lastSample map[[2]int64]int64
	// seen is the newest record time per node in this batch (NodeSeen).
	seen map[int64]int64
	// models caches a node's GPU model and MIG instances (nodeKind).
	models map[int64]nodeKind
	// billing caches the billing weights' history (billingWeights).
	billing billingHistory
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
	series    seriesFold // the fold mark, read once (write_series_packs.go)
	zone      zoneState  // the zone rollups' mark, read once (write_zonerollup.go)
	// Pending job × GPU metric figures (write_jobmetrics.go): added by samples
	// and recounts, the metrics a GPU cannot give, and the job GPUs
	// whose peaks must be read again.
	metrics     map[metricKey]*metricAcc
	unsupported map[metricKey]string
	remax       map[remaxKey]alloc
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

// Begin starts a write transaction at time now. On a PostgreSQL writer
// the batch holds the Ledger's one connection until it ends: call no other
// method of s before then (see Ledger).
func (s *Ledger) Begin(ctx context.Context, now time.Time) (*Batch, error) {
	// The batch holds its connection so that the sample inserts can use
	// the driver directly (sampleInserter), inside the same transaction.
	conn, tx, give, err := s.openWrite(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	b := newBatch(ctx, conn, tx, now)
	if s.db.pg != nil {
		tx.pipe = &pipeline{conn: conn, descs: &s.pg.descs}
	}
	b.give = give
	return b, nil
}

// postgres: the ledger is PostgreSQL's (samples go in by COPY).
func (b *Batch) postgres() bool { return b.tx.pg != nil }

// newBatch is a batch in tx, which runs on conn.
func newBatch(ctx context.Context, conn *sql.Conn, tx *ledgerTx, now time.Time) *Batch {
	return &Batch{
		ctx: ctx, conn: conn, tx: tx, now: now, IdleUtil: 1,
		models: map[int64]nodeKind{}, seen: map[int64]int64{}, rerolls: map[int64]bool{}, summaries: map[int64]bool{},
		st: map[string]*ledgerStmt{}, nodes: map[[2]string]int64{}, gpus: map[string]gpuRow{},
		jobs: map[jobKey]int64{}, dims: map[int64]Dims{}, noHours: map[int64]bool{}, unchecked: map[int64]bool{}, prev: map[int64]energyReading{},
		use: map[useKey]*Usage{}, touched: map[useKey]struct{}{}, lastSample: map[[2]int64]int64{},
		give: func() {},
	}
}

// Commit flushes pending rollup changes and commits.
func (b *Batch) Commit() error {
	for _, step := range []func() error{b.settle, b.flushUse, b.flushMetrics, b.flushSeen, b.Flush} {
		if err := step(); err != nil {
			b.Rollback()
			return err
		}
	}
	b.closeStmts()
	err := b.tx.Commit()
	b.conn.Close()
	b.give()
	if err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	b.shared.learn(b.jobs)
	return nil
}

// Flush sends the rows waiting (held rows, samples) and reads the results
// of the writes the batch has sent (PostgreSQL: engine_pipeline_pg.go), and
// returns the first failure; on SQLite, where each write runs
// when it is made, it does nothing. Ingest flushes after each file, so
// that a failure is that file's.
func (b *Batch) Flush() error {
	return b.tx.pipe.flush(b.ctx)
}

// Rollback abandons the batch.
func (b *Batch) Rollback() {
	b.tx.pipe.discard()
	b.closeStmts()
	_ = b.tx.Rollback()
	b.conn.Close()
	b.give()
}

func (b *Batch) closeStmts() {
	for _, s := range b.st {
		s.Close()
	}
}

// settle runs the rerolls and summaries that events left for the end of
// the batch, in a fixed order.
func (b *Batch) settle() error {
	rr := make([]int64, 0, len(b.rerolls))
	for j := range b.rerolls {
		rr = append(rr, j)
	}
	sort.Slice(rr, func(i, j int) bool { return rr[i] < rr[j] })
	// Every node of each job: a start on a node with a lower id moves the
	// job's count (jobs = 1) there from the node that had it.
	spans, err := b.jobSpans(rr)
	if err != nil {
		return err
	}
	for _, j := range rr {
		for _, n := range spans[j] {
			if err := b.rerollSpan(j, n.node, n.span); err != nil {
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

func (b *Batch) stmt(q string) (*ledgerStmt, error) {
	if s, ok := b.st[q]; ok {
		return s, nil
	}
	s, err := b.tx.PrepareContext(b.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", firstLine(q), translate(err))
	}
	b.st[q] = s
	return s, nil
}

func (b *Batch) exec(q string, args ...any) (sql.Result, error) {
	if b.tx.pipe != nil {
		// Sent in pipeline mode, prepared there (pipeline.send): not
		// through database/sql, which would take the connection out of
		// it.
		return deferredResult{}, b.tx.pipe.add(b.ctx, b.tx.sql(q), pgArgs(true, args))
	}
	s, err := b.stmt(q)
	if err != nil {
		return nil, err
	}
	r, err := s.ExecContext(b.ctx, args...)
	if err != nil {
		if b.tx.pipe != nil {
			return nil, err // named by its statement when it was sent
		}
		return nil, fmt.Errorf("%s: %w", firstLine(q), translate(err))
	}
	return r, nil
}

// execNow is exec for a caller that reads the statement's row count: it
// runs at once, after whatever is queued.
func (b *Batch) execNow(q string, args ...any) (sql.Result, error) {
	r, err := b.tx.execNow(b.ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", firstLine(q), translate(err))
	}
	return r, nil
}

func (b *Batch) queryRow(q string, args ...any) (scanRow, error) {
	if b.tx.pipe != nil {
		rows, err := b.tx.pipe.query(b.ctx, b.tx.sql(q), pgArgs(true, args))
		return scanRow{pg: &pgRow{rows}}, err
	}
	if err := b.Flush(); err != nil {
		return scanRow{}, err
	}
	s, err := b.stmt(q)
	if err != nil {
		return scanRow{}, err
	}
	return scanRow{r: s.QueryRowContext(b.ctx, args...)}, nil
}

// scanRow is a row whose Scan error carries the store's kinds (ingest
// tells a full disk from a bad record by them): database/sql's, or on a
// PostgreSQL batch the first row its pipeline read (pipeline.query).
type scanRow struct {
	r  *sql.Row
	pg *pgRow
}

func (r scanRow) Scan(dest ...any) error {
	if r.pg != nil {
		return r.pg.Scan(dest...)
	}
	return translate(r.r.Scan(dest...))
}

// query is the rows of a read in the batch: on PostgreSQL sent with the
// queued writes and held in memory (pipeline.query), so for the reads of
// one job's or one GPU's rows, not for listings.
func (b *Batch) query(q string, args ...any) (batchRows, error) {
	if b.tx.pipe != nil {
		return b.tx.pipe.query(b.ctx, b.tx.sql(q), pgArgs(true, args))
	}
	s, err := b.stmt(q)
	if err != nil {
		return nil, err
	}
	return translateRows(s.QueryContext(b.ctx, args...))
}

// batchRows are the rows of Batch.query: database/sql's, or those a
// PostgreSQL batch's pipeline read.
type batchRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// execMany runs the one-row write q once for each of rows, in order. On
// PostgreSQL that is one statement over one array a column (manyForm):
// a batch's hundreds of job-hour and rollup rows cost the server one
// statement each kind, not one each row. The rows must differ in what
// the statement finds its row by (an INSERT's conflict target, an
// UPDATE's WHERE): a statement over arrays changes a row once, and
// fails for a second change of it; only an INSERT … DO NOTHING takes
// the same key twice (the first stands, as one statement after the
// other). On SQLite, in process, each row is its statement.
func (b *Batch) execMany(q string, rows [][]any) error {
	if b.tx.pipe == nil || len(rows) == 1 {
		for _, r := range rows {
			if _, err := b.exec(q, r...); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		return nil
	}
	for _, r := range rows {
		pgArgs(true, r)
	}
	return b.tx.pipe.addMany(b.ctx, b.tx.sql(q), rows)
}

// hold writes row by the one-row write q into table, as execMany does, but
// on PostgreSQL not yet: rows of one statement wait together for one
// statement over arrays, sent before any statement that names table, at
// a flush and at the commit (pipeline.sendWaiting). For a table written a
// row a file (ingested_files, applied_keys), whose rows the batch reads
// back only by asking about that table. The first key values of a row
// name it: a later row of the same key replaces an earlier one (0: every
// row is kept, for an INSERT … DO NOTHING).
func (b *Batch) hold(table, q string, key int, row []any) error {
	if b.tx.pipe == nil {
		_, err := b.exec(q, row...)
		return err
	}
	return b.tx.pipe.hold(table, b.tx.sql(q), key, pgArgs(true, row))
}
