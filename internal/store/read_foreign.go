package store

import (
	"context"
	"database/sql"
	"fmt"
)

// MaxForeignGPUs bounds the GPUs one ForeignGPUs read lists.
const MaxForeignGPUs = 100

// ForeignGPU is one GPU whose samples showed a process of no job that
// held it, within a window.
type ForeignGPU struct {
	Cluster, Node string
	Index         *int64
	// Samples counts the samples that showed one; First and Last are
	// the first and last of them (Unix milliseconds).
	Samples     int64
	First, Last int64
}

// ForeignGPUs lists the GPUs whose samples in [fromMs, toMs) showed a
// foreign process, most samples first, at most limit (MaxForeignGPUs
// when 0 or more). Each GPU's samples are read by the key's range, so
// the read is bounded by the window, not by the table.
func (s *Ledger) ForeignGPUs(ctx context.Context, fromMs, toMs int64, limit int) ([]ForeignGPU, error) {
	if limit <= 0 || limit > MaxForeignGPUs {
		limit = MaxForeignGPUs
	}
	rows, err := s.db.QueryContext(ctx, `SELECT n.cluster, n.name, g.idx, count(*), min(s.t_ms), max(s.t_ms)
 FROM gpus g JOIN nodes n ON n.id = g.node_id JOIN samples s ON s.gpu_id = g.id AND s.t_ms >= ? AND s.t_ms < ?
 WHERE s.foreign_procs > 0 GROUP BY g.id, n.cluster, n.name, g.idx ORDER BY count(*) DESC, n.cluster, n.name, g.idx LIMIT ?`, fromMs, toMs, limit)
	out, err := collect(rows, err, func(r batchRows, f *ForeignGPU) error {
		var idx sql.NullInt64
		err := r.Scan(&f.Cluster, &f.Node, &idx, &f.Samples, &f.First, &f.Last)
		f.Index = ptrInt(idx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read foreign processes: %w", translate(err))
	}
	return out, nil
}
