package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// MaxNotes bounds one Notes read: far more notes than a cluster keeps.
const MaxNotes = 10_000

// ErrTooManyNotes means a Notes read stopped at MaxNotes rows: the rows
// returned with it are not all the notes.
var ErrTooManyNotes = errors.New("more notes than one read returns")

// ErrNoNote means no note has the id asked for.
var ErrNoNote = errors.New("no such note")

// ErrNoteRemoved means the note was removed already.
var ErrNoteRemoved = errors.New("note already removed")

// Note is a note or booking on a node or one of its GPUs.
type Note struct {
	ID      int64
	Cluster string
	Node    string
	GPU     *int // nil: the whole node
	Until   time.Time
	Text    string
	Author  string // user name at the time of writing
	UID     int
	Created time.Time
	// RemovedAt is nil while the note is not removed.
	RemovedAt *time.Time
	RemovedBy string
}

const noteColumns = `id, cluster, node, gpu, until, text, author, uid, created, removed_at, removed_by`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

func scanNote(r scanner) (Note, error) {
	var n Note
	var gpu, removed sql.NullInt64
	var until, created int64
	if err := r.Scan(&n.ID, &n.Cluster, &n.Node, &gpu, &until, &n.Text, &n.Author, &n.UID, &created, &removed, &n.RemovedBy); err != nil {
		return Note{}, err
	}
	if gpu.Valid {
		g := int(gpu.Int64)
		n.GPU = &g
	}
	n.Until = time.Unix(until, 0).UTC()
	n.Created = time.Unix(created, 0).UTC()
	n.RemovedAt = ptrTime(removed)
	return n, nil
}

// ptrTime is the UTC time of Unix seconds v, nil for NULL.
func ptrTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.Unix(v.Int64, 0).UTC()
	return &t
}

// Notes returns the notes active at now (created <= now < until, not
// removed), ordered by node, GPU, ID; with all, every note ever kept,
// newest first; at most MaxNotes rows either way. Past MaxNotes it
// returns the first MaxNotes with an error wrapping ErrTooManyNotes, so
// that no caller takes a cut list for the whole (a board would show
// booked GPUs free). It reads only, so a store opened read-only serves
// it.
func (s *Ledger) Notes(ctx context.Context, now time.Time, all bool) ([]Note, error) {
	q := `SELECT ` + noteColumns + ` FROM notes WHERE removed_at IS NULL AND created <= ?1 AND until > ?1
 ORDER BY node, gpu IS NOT NULL, gpu, id LIMIT ?2`
	args := []any{now.Unix(), MaxNotes + 1}
	if all {
		q = `SELECT ` + noteColumns + ` FROM notes ORDER BY id DESC LIMIT ?`
		args = args[1:]
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, func(r batchRows, n *Note) (err error) {
		*n, err = scanNote(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read notes: %w", translate(err))
	}
	if len(out) > MaxNotes {
		return out[:MaxNotes], fmt.Errorf("read notes: stopped at %d: %w", MaxNotes, ErrTooManyNotes)
	}
	return out, nil
}

// Note returns the note with id, removed or not; ErrNoNote when none.
func (s *Ledger) Note(ctx context.Context, id int64) (Note, error) {
	n, err := scanNote(s.db.QueryRowContext(ctx, `SELECT `+noteColumns+` FROM notes WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Note{}, fmt.Errorf("note %d: %w", id, ErrNoNote)
	}
	if err != nil {
		return Note{}, fmt.Errorf("read note %d: %w", id, translate(err))
	}
	return n, nil
}

// NodeGPUs says whether the ledger knows node (in cluster; any cluster
// when cluster is "") and how many GPU indexes it has seen on it (0 when
// none is known).
func (s *Ledger) NodeGPUs(ctx context.Context, cluster, node string) (gpus int, known bool, err error) {
	var nodes int
	err = s.db.QueryRowContext(ctx, `SELECT count(DISTINCT n.id), coalesce(max(g.idx) + 1, 0) FROM nodes n LEFT JOIN gpus g ON g.node_id = n.id
 WHERE n.name = ?1 AND (?2 = '' OR n.cluster = ?2)`, node, cluster).Scan(&nodes, &gpus)
	if err != nil {
		return 0, false, fmt.Errorf("read node %q: %w", node, translate(err))
	}
	return gpus, nodes > 0, nil
}

// maxNodeClusters bounds the clusters NodeClusters names.
const maxNodeClusters = 100

// NodeClusters are the clusters whose node is named node, sorted (a
// note's cluster that does not have it is told which do).
func (s *Ledger) NodeClusters(ctx context.Context, node string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT cluster FROM nodes WHERE name = ? ORDER BY cluster LIMIT ?`, node, maxNodeClusters)
	out, err := collect(rows, err, func(r batchRows, c *string) error { return r.Scan(c) })
	if err != nil {
		return nil, fmt.Errorf("read clusters of node %q: %w", node, translate(err))
	}
	return out, nil
}

// KnownCluster says whether the ledger knows cluster: a node or a job
// of it (a request naming another cluster is refused, not applied to
// the writer's).
func (s *Ledger) KnownCluster(ctx context.Context, cluster string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM nodes WHERE cluster = ?1 UNION ALL SELECT 1 FROM jobs WHERE cluster = ?1 LIMIT 1) k`, cluster).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up cluster %q: %w", cluster, translate(err))
	}
	return n > 0, nil
}
