package store

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Node returns the id of (cluster, node), creating it.
func (b *Batch) Node(cluster, node string) (int64, error) {
	k := [2]string{cluster, node}
	if id, ok := b.nodes[k]; ok {
		return id, nil
	}
	id, err := b.findOrMake(fmt.Sprintf("node %s/%s", cluster, node),
		`SELECT id FROM nodes WHERE cluster = ? AND name = ?`,
		`INSERT INTO nodes(cluster, name) VALUES(?, ?) ON CONFLICT DO NOTHING`, cluster, node)
	if err != nil {
		return 0, err
	}
	b.nodes[k] = id
	return id, nil
}

// findOrMake is the id of the row find finds, made by insert first when
// there is none: both take args. Looked up before inserting: on
// PostgreSQL an INSERT that meets the conflict still uses up a sequence
// number, and the ids would then depend on how the records were batched.
// what names the row in an error.
func (b *Batch) findOrMake(what, find, insert string, args ...any) (int64, error) {
	id, found, err := b.findID(what, find, args...)
	if err != nil || found {
		return id, err
	}
	if _, err := b.exec(insert, args...); err != nil {
		return 0, err
	}
	if id, found, err = b.findID(what, find, args...); err == nil && !found {
		err = fmt.Errorf("%s: %w", what, sql.ErrNoRows)
	}
	if err != nil {
		return 0, err
	}
	return id, nil
}

// findID is the id q finds, if the ledger has the row; what names it in
// an error.
func (b *Batch) findID(what, q string, args ...any) (int64, bool, error) {
	row, err := b.queryRow(q, args...)
	if err != nil {
		return 0, false, err
	}
	var id int64
	switch err := row.Scan(&id); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("%s: %w", what, err)
	}
	return id, true, nil
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
	if g, ok := b.gpus[uuid]; ok && g.same(node, index, minor, model) {
		return g.id, nil
	}
	// Known to the ledger as it is: no upsert, which on PostgreSQL would
	// use up a sequence number each batch.
	g, found, err := b.gpuRow(uuid)
	if err != nil {
		return 0, err
	}
	if !found || !g.same(node, index, minor, model) {
		if _, err := b.exec(`INSERT INTO gpus(uuid, node_id, idx, minor, model) VALUES(?, ?, ?, ?, ?)
ON CONFLICT(uuid) DO UPDATE SET idx = coalesce(excluded.idx, idx), minor = coalesce(excluded.minor, minor),
 model = CASE WHEN excluded.model != '' THEN excluded.model ELSE model END`,
			uuid, node, intPtr(index), intPtr(minor), model); err != nil {
			return 0, err
		}
		clear(b.models) // a node's model or MIG instances may have changed
		if g, found, err = b.gpuRow(uuid); err == nil && !found {
			err = fmt.Errorf("gpu %s: %w", uuid, sql.ErrNoRows)
		}
		if err != nil {
			return 0, err
		}
	}
	b.gpus[uuid] = g
	return g.id, nil
}

// same reports whether the GPU's upsert on node with these values would
// leave g as it is. A GPU is never moved to another node: checkSegment
// and checkEvent refuse a UUID that another node reported (invariant 8).
func (g gpuRow) same(node int64, index, minor *int, model string) bool {
	return g.node == node && (model == "" || g.model == model) &&
		(minor == nil || (g.hasMinor && g.minor == *minor)) && (index == nil || (g.hasIdx && g.idx == *index))
}

// gpuRow is the gpus row of uuid, if the ledger has it.
func (b *Batch) gpuRow(uuid string) (gpuRow, bool, error) {
	row, err := b.queryRow(`SELECT id, node_id, model, idx, minor FROM gpus WHERE uuid = ?`, uuid)
	if err != nil {
		return gpuRow{}, false, err
	}
	var g gpuRow
	var idx, mnr sql.NullInt64
	switch err := row.Scan(&g.id, &g.node, &g.model, &idx, &mnr); {
	case errors.Is(err, sql.ErrNoRows):
		return gpuRow{}, false, nil
	case err != nil:
		return gpuRow{}, false, fmt.Errorf("gpu %s: %w", uuid, err)
	}
	g.idx, g.hasIdx = int(idx.Int64), idx.Valid
	g.minor, g.hasMinor = int(mnr.Int64), mnr.Valid
	return g, true, nil
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
	if id, ok := b.shared.get(k); ok {
		b.jobs[k] = id
		return id, nil
	}
	if b.postgres() {
		// One round trip, made or found: a new job's lookup, insert and
		// lookup again were two, each after the queued writes went out.
		id, err := b.makeJobPG(k)
		if err != nil {
			return 0, err
		}
		b.jobs[k] = id
		return id, nil
	}
	id, err := b.findOrMake(fmt.Sprintf("job %s/%d/%d", cluster, job, restart),
		`SELECT id FROM jobs WHERE cluster = ? AND job_id = ? AND restart = ?`,
		`INSERT INTO jobs(cluster, job_id, restart) VALUES(?, ?, ?) ON CONFLICT DO NOTHING`, cluster, int64(job), restart)
	if err != nil {
		return 0, err
	}
	b.jobs[k] = id
	return id, nil
}

// makeJobPG is the row id of job run k, made if the ledger has none, in
// one statement. The insert runs only when the lookup found nothing, so
// that a known job uses up no sequence number (an INSERT that meets its
// conflict would); the made row comes from RETURNING, which the
// statement's own lookup cannot see. The job's dimensions come along
// (a made row's are its defaults), so that its events need not ask for
// them (jobDims), and a made job has no hours for moveJob to move.
func (b *Batch) makeJobPG(k jobKey) (int64, error) {
	row, err := b.queryRow(`WITH found AS (SELECT id, cluster, user, account, partition, ignored FROM jobs WHERE cluster = ? AND job_id = ? AND restart = ?),
made AS (INSERT INTO jobs(cluster, job_id, restart) SELECT CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT)
	WHERE NOT EXISTS (SELECT 1 FROM found) ON CONFLICT DO NOTHING RETURNING id, cluster, user, account, partition, ignored)
SELECT *, 0 FROM found UNION ALL SELECT *, 1 FROM made`,
		k.cluster, int64(k.job), k.restart, k.cluster, int64(k.job), k.restart)
	if err != nil {
		return 0, err
	}
	var id int64
	var d Dims
	var made bool
	if err := row.Scan(&id, &d.Cluster, &d.User, &d.Account, &d.Partition, &d.Ignored, &made); err != nil {
		return 0, fmt.Errorf("job %s/%d/%d: %w", k.cluster, k.job, k.restart, err)
	}
	b.knowJob(k, id, d)
	if made {
		b.noHours[id] = true
		b.unchecked[id] = true
	}
	return id, nil
}

// knowJob keeps what a read brought of job run k: its row id and its
// dimensions as stored, unless the batch holds them already (its own
// changes to the dimensions go through jobDims and moveJob, which keep
// b.dims).
func (b *Batch) knowJob(k jobKey, id int64, d Dims) {
	if _, ok := b.jobs[k]; !ok {
		b.jobs[k] = id
	}
	if _, ok := b.dims[id]; !ok {
		b.dims[id] = d
	}
}

// JobIDs are the job row ids that the committed batches of one pass
// learned, for the batches after them: a job's events and samples are
// spread over a pass's batches, and each batch asked the ledger again
// (on PostgreSQL a round trip each, after the queued writes went out).
// A job run's row id never changes once committed. Used by one
// goroutine, the writer's.
type JobIDs struct{ m map[jobKey]int64 }

// maxJobIDs bounds JobIDs: past it, it starts over.
const maxJobIDs = 1 << 16

// NewJobIDs is an empty JobIDs.
func NewJobIDs() *JobIDs { return &JobIDs{m: map[jobKey]int64{}} }

func (c *JobIDs) get(k jobKey) (int64, bool) {
	if c == nil {
		return 0, false
	}
	id, ok := c.m[k]
	return id, ok
}

// learn takes the ids of a batch that committed.
func (c *JobIDs) learn(ids map[jobKey]int64) {
	if c == nil {
		return
	}
	if len(c.m)+len(ids) > maxJobIDs {
		clear(c.m)
	}
	for k, id := range ids {
		c.m[k] = id
	}
}

// ShareJobIDs makes b look job row ids up in c before the ledger, and
// add those it used to c when it commits (not when it rolls back: the
// rows it made are then gone).
func (b *Batch) ShareJobIDs(c *JobIDs) { b.shared = c }

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
	g, err := b.nodeKind(node)
	return g.model, err
}

// nodeKind is a node's GPU model and whether MIG instances are among its
// GPUs, read in one query and kept for the batch.
func (b *Batch) nodeKind(node int64) (nodeKind, error) {
	if g, ok := b.models[node]; ok {
		return g, nil
	}
	row, err := b.queryRow(`SELECT coalesce((SELECT model FROM gpus WHERE node_id = ? AND model != '' ORDER BY id LIMIT 1), ''),
 EXISTS (SELECT 1 FROM gpus WHERE node_id = ? AND uuid LIKE 'MIG-%')`, node, node)
	if err != nil {
		return nodeKind{}, err
	}
	var g nodeKind
	if err := row.Scan(&g.model, &g.mig); err != nil {
		return nodeKind{}, fmt.Errorf("model of node %d: %w", node, err)
	}
	b.models[node] = g
	return g, nil
}
