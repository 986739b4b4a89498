package servecmd

import (
	"context"
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

// fillLastHour gives src's strips the hour before now from the ledger,
// so a restarted serve does not show an hour of gaps. One read walks
// every GPU's samples of the hour and hands them over one GPU at a time:
// a read per GPU made ten thousand queries at ten thousand GPUs, more
// than fillTimeout allows. It must run before the board's first build: a
// strip skips readings older than those it holds.
func fillLastHour(ctx context.Context, st *store.Ledger, src *board.Source, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, fillTimeout)
	defer cancel()
	from, to := now.Add(-board.StripMinutes*time.Minute).UnixMilli(), now.UnixMilli()
	var points []board.Point
	err := st.EachGPUWindow(ctx, from, to, fillRowsPerGPU, fillMaxGPUs, func(w *store.GPUWindow) error {
		idx := 0
		if w.GPU.Index != nil {
			idx = int(*w.GPU.Index)
		}
		points = points[:0]
		for _, s := range w.Samples {
			p := board.Point{Cluster: w.Cluster, Node: w.Node, UUID: w.GPU.UUID, Index: idx, At: time.UnixMilli(s.T), Job: uint64(max(s.Job, 0))}
			if s.HasUtil && s.Util >= 0 {
				v := uint32(s.Util)
				p.Util = &v
			}
			points = append(points, p)
		}
		src.Fill(points)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the ledger's last hour: %w", err)
	}
	return nil
}
