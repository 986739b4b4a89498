package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// NodeRow is a node that shipped records.
type NodeRow struct {
	ID            int64
	Cluster, Name string
}

// Nodes lists every node of the ledger (one row a node: the ledger's
// size bounds it).
func (s *Ledger) Nodes(ctx context.Context) ([]NodeRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, cluster, name FROM nodes`)
	out, err := collect(rows, err, func(r batchRows, n *NodeRow) error { return r.Scan(&n.ID, &n.Cluster, &n.Name) })
	return out, translate(err)
}

// NodeSeen is when a node was last heard of: its newest record and the
// pass that ingested it (Unix seconds; nil if never).
type NodeSeen struct {
	ID                     int64
	LastRecord, LastIngest *int64
}

// NodesSeen lists every node with when it was last heard of.
func (s *Ledger) NodesSeen(ctx context.Context) ([]NodeSeen, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, last_record, last_ingest FROM nodes`)
	out, err := collect(rows, err, func(r batchRows, n *NodeSeen) error {
		var rec, ing sql.NullInt64
		err := r.Scan(&n.ID, &rec, &ing)
		n.LastRecord, n.LastIngest = ptrInt(rec), ptrInt(ing)
		return err
	})
	return out, translate(err)
}

func ptrInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	x := v.Int64
	return &x
}

func ptrFloat(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	x := v.Float64
	return &x
}

// inList appends "AND col IN (?, ?...)" for a non-empty list.
func inList[T string | int64](q *strings.Builder, args *[]any, col string, vals []T) {
	if len(vals) == 0 {
		return
	}
	q.WriteString(" AND " + col + " IN (")
	for i, v := range vals {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("?")
		*args = append(*args, v)
	}
	q.WriteString(")")
}

// NodeLast is a node's newest record time (Unix seconds).
type NodeLast struct {
	Cluster, Name string
	LastRecord    int64
}

// NodeLastRecords lists the nodes that shipped a record, with the newest
// one's time (one row a node: the ledger's size bounds it).
func (s *Ledger) NodeLastRecords(ctx context.Context) ([]NodeLast, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cluster, name, last_record FROM nodes WHERE last_record IS NOT NULL ORDER BY cluster, name`)
	out, err := collect(rows, err, func(r batchRows, n *NodeLast) error { return r.Scan(&n.Cluster, &n.Name, &n.LastRecord) })
	if err != nil {
		return nil, fmt.Errorf("read node record times: %w", translate(err))
	}
	return out, nil
}
