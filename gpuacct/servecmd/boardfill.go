package servecmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of the last hour read back at start: a slow ledger delays the
// board by fillTimeout at most, and a GPU sampled far more often than the
// agent's default cannot hold more than fillRowsPerGPU points in memory.
const (
	fillTimeout    = 10 * time.Second
	fillRowsPerGPU = 3600
	fillMaxGPUs    = 100_000
)

// Columns of store.ExportSamples' rows that a strip reads.
const (
	fillColT    = 3
	fillColJob  = 5
	fillColUtil = 8
)

// fillLastHour gives src's strips the hour before now from the ledger,
// so a restarted serve does not show an hour of gaps. It reads each GPU's
// samples through the samples export's read and hands them over one GPU
// at a time. It must run before the board's first build: a strip skips
// readings older than those it holds.
func fillLastHour(ctx context.Context, st *store.Ledger, src *board.Source, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, fillTimeout)
	defer cancel()
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("read the ledger's nodes: %w", err)
	}
	type node struct{ cluster, name string }
	byID := make(map[int64]node, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = node{n.Cluster, n.Name}
	}
	gpus, err := st.GPUs(ctx)
	if err != nil {
		return fmt.Errorf("read the ledger's GPUs: %w", err)
	}
	if len(gpus) > fillMaxGPUs {
		gpus = gpus[:fillMaxGPUs]
	}
	from, to := now.Add(-board.StripMinutes*time.Minute).UnixMilli(), now.UnixMilli()
	// full stops one GPU's read at fillRowsPerGPU rows.
	full := errors.New("enough samples of one GPU")
	var points []board.Point
	for _, g := range gpus {
		n, ok := byID[g.NodeID]
		if !ok {
			continue
		}
		idx := 0
		if g.Index != nil {
			idx = int(*g.Index)
		}
		points = points[:0]
		err := st.ExportSamples(ctx, n.name, g, from, to, func(vals []any) error {
			if len(points) >= fillRowsPerGPU {
				return full
			}
			t, _ := vals[fillColT].(int64)
			job, _ := vals[fillColJob].(int64)
			p := board.Point{Cluster: n.cluster, Node: n.name, UUID: g.UUID, Index: idx, At: time.UnixMilli(t), Job: uint64(max(job, 0))}
			if u, ok := vals[fillColUtil].(int64); ok && u >= 0 {
				v := uint32(u)
				p.Util = &v
			}
			points = append(points, p)
			return nil
		})
		if err != nil && !errors.Is(err, full) {
			return fmt.Errorf("read the last hour of GPU %s on %s: %w", g.UUID, n.name, err)
		}
		src.Fill(points)
	}
	return nil
}
