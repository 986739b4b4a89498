package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// WindowSample is what a board's strip reads of a stored sample.
type WindowSample struct {
	T   int64 // Unix milliseconds
	Job int64 // 0: no job, as the samples export has it
	// Util is the utilization (%) when HasUtil.
	Util    int64
	HasUtil bool
}

// GPUWindow is one GPU's samples in a window, as EachGPUWindow hands them
// over.
type GPUWindow struct {
	Cluster, Node string
	GPU           GPURow
	Samples       []WindowSample
}

// gpuPacksSQL builds the query that reads every GPU's packs that may
// hold samples of a window, [packFloor(from), to) as its two
// placeholders, in one query: cols from gpus g and nodes n, then p.data,
// each GPU's packs read by the key's range so that the read is bounded by
// the window, not by the table; order ends the query. CROSS JOIN makes
// SQLite lead with gpus (by id), which then needs no sort. PostgreSQL's
// planner joined that plain form by hashing a sequential scan of the
// month's partition (2.4 s for 11.5 M packs): LATERAL makes it probe
// each GPU's key range.
func gpuPacksSQL(pg bool, cols, order string) string {
	if pg {
		return "SELECT " + cols + ", p.data" + `
 FROM gpus g JOIN nodes n ON n.id = g.node_id
 CROSS JOIN LATERAL (SELECT x.t0_ms, x.data FROM sample_packs x WHERE x.gpu_id = g.id AND x.t0_ms >= ? AND x.t0_ms < ? ORDER BY x.t0_ms) p` + order
	}
	return "SELECT " + cols + ", p.data" + `
 FROM gpus g CROSS JOIN sample_packs p JOIN nodes n ON n.id = g.node_id
 WHERE p.gpu_id = g.id AND p.t0_ms >= ? AND p.t0_ms < ?` + order
}

// gpuWindowsSQL and gpuWindowsPG read every GPU's packs of a window by
// GPU and then time, for SQLite and PostgreSQL.
var (
	gpuWindowsSQL = gpuPacksSQL(false, "g.id, g.node_id, g.uuid, g.idx, n.cluster, n.name", "\n ORDER BY g.id, p.t0_ms")
	gpuWindowsPG  = gpuPacksSQL(true, "g.id, g.node_id, g.uuid, g.idx, n.cluster, n.name", "\n ORDER BY g.id, p.t0_ms")
)

// EachGPUWindow calls fn with each GPU's samples whose time is in
// [fromMs, toMs), in time order, one GPU at a time by its ledger id: a
// single query where a read per GPU (ExportSamples) costs one round trip
// each, ten thousand at ten thousand GPUs. Memory stays one GPU's
// samples: at most maxPerGPU of them (its first ones), and at most
// maxGPUs GPUs, those with samples in the window. w and its Samples are
// reused between calls; an error from fn stops the read and is returned
// as it is.
func (s *Ledger) EachGPUWindow(ctx context.Context, fromMs, toMs int64, maxPerGPU, maxGPUs int, fn func(w *GPUWindow) error) error {
	if maxPerGPU <= 0 || maxGPUs <= 0 {
		return nil
	}
	q := gpuWindowsSQL
	if s.pg != nil {
		q = gpuWindowsPG
	}
	rows, err := s.db.QueryContext(ctx, q, packFloor(fromMs), toMs)
	if err != nil {
		return fmt.Errorf("read the GPUs' samples: %w", translate(err))
	}
	defer rows.Close()
	var w GPUWindow
	started, done := false, 0
	// flush hands the GPU read so far to fn; fnErr keeps fn's error apart
	// from the ledger's, which get context.
	var fnErr error
	flush := func() {
		if !started || len(w.Samples) == 0 {
			return
		}
		done++
		fnErr = fn(&w)
	}
	for rows.Next() {
		var (
			gid, nodeID         int64
			uuid, cluster, node string
			idx                 sql.NullInt64
			data                []byte
		)
		if err := rows.Scan(&gid, &nodeID, &uuid, &idx, &cluster, &node, &data); err != nil {
			return fmt.Errorf("read the GPUs' samples: %w", translate(err))
		}
		if !started || gid != w.GPU.ID {
			if flush(); fnErr != nil {
				return fnErr
			}
			if done >= maxGPUs {
				return nil
			}
			w = GPUWindow{Cluster: cluster, Node: node, GPU: GPURow{ID: gid, NodeID: nodeID, UUID: uuid, Index: ptrInt(idx)}, Samples: w.Samples[:0]}
			started = true
		}
		if len(w.Samples) >= maxPerGPU {
			continue
		}
		err := eachPackedIn(data, gid, fromMs, toMs, func(r *sampleRow) error {
			if len(w.Samples) >= maxPerGPU {
				return errStopSamples
			}
			job, _ := r.num(colJob)
			u, ok := r.num(colUtil)
			w.Samples = append(w.Samples, WindowSample{T: r.ints[colT], Job: job, Util: u, HasUtil: ok})
			return nil
		})
		if err != nil && !errors.Is(err, errStopSamples) {
			return fmt.Errorf("read the samples of gpu %d: %w", gid, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the GPUs' samples: %w", translate(err))
	}
	flush()
	return fnErr
}
