package store

import (
	"context"
	"database/sql"
)

// NodeOverview is a node with its GPU count and when it was last heard
// of, as the dashboard lists it (its JSON fields are /api/v1/nodes').
type NodeOverview struct {
	ID      int64  `json:"-"`
	Cluster string `json:"cluster"`
	Name    string `json:"node"`
	// LastSeen is its newest record, else the pass that last ingested
	// from it (Unix seconds); nil if neither.
	LastSeen *int64 `json:"-"`
	GPUs     int64  `json:"gpus"`
}

// NodesOverview lists every node by cluster and name (one row a node:
// the ledger's size bounds it).
func (s *Ledger) NodesOverview(ctx context.Context) ([]NodeOverview, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT n.id, n.cluster, n.name, coalesce(n.last_record, n.last_ingest),
 (SELECT count(*) FROM gpus g WHERE g.node_id = n.id) FROM nodes n ORDER BY n.cluster, n.name`)
	out, err := collect(rows, err, func(r batchRows, n *NodeOverview) error {
		var last sql.NullInt64
		err := r.Scan(&n.ID, &n.Cluster, &n.Name, &last, &n.GPUs)
		n.LastSeen = ptrInt(last)
		return err
	})
	return out, translate(err)
}

// MaxNodeID is the newest node's id, 0 when there is none: node ids only
// grow, so a reader that named the nodes at open knows by a change of it
// that a node appeared since.
func (s *Ledger) MaxNodeID(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM nodes`).Scan(&n); err != nil {
		return 0, translate(err)
	}
	return n, nil
}
