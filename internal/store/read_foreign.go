package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
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
	rows, err := s.db.QueryContext(ctx, `SELECT g.id, n.cluster, n.name, g.idx FROM gpus g JOIN nodes n ON n.id = g.node_id`)
	type gpu struct {
		id int64
		f  ForeignGPU
	}
	gpus, err := collect(rows, err, func(r batchRows, g *gpu) error {
		var idx sql.NullInt64
		err := r.Scan(&g.id, &g.f.Cluster, &g.f.Node, &idx)
		g.f.Index = ptrInt(idx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read foreign processes: %w", translate(err))
	}
	var out []ForeignGPU
	for _, g := range gpus {
		f := g.f
		err := s.eachSample(ctx, g.id, fromMs, toMs, func(r *sampleRow) error {
			if n, _ := r.vals[colForeign].(int64); n > 0 {
				t := r.vals[colT].(int64)
				if f.Samples == 0 {
					f.First = t
				}
				f.Samples++
				f.Last = t
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read foreign processes: %w", err)
		}
		if f.Samples > 0 {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b ForeignGPU) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		switch {
		case a.Index == nil || b.Index == nil:
			return cmp.Compare(boolInt(a.Index != nil), boolInt(b.Index != nil))
		}
		return cmp.Compare(*a.Index, *b.Index)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
