package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
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

// foreignSQL and foreignPG read every GPU's packs that may hold samples
// of a window, in no order, for SQLite and PostgreSQL (gpuPacksSQL).
var (
	foreignSQL = gpuPacksSQL(false, "g.id, n.cluster, n.name, g.idx", "")
	foreignPG  = gpuPacksSQL(true, "g.id, n.cluster, n.name, g.idx", "")
)

// ForeignGPUs lists the GPUs whose samples in [fromMs, toMs) showed a
// foreign process, most samples first, at most limit (MaxForeignGPUs
// when 0 or more). Each GPU's packs are read by the key's range, so the
// read is bounded by the window, not by the table.
func (s *Ledger) ForeignGPUs(ctx context.Context, fromMs, toMs int64, limit int) ([]ForeignGPU, error) {
	q := foreignSQL
	if s.pg != nil {
		q = foreignPG
	}
	return s.foreignGPUs(ctx, q, fromMs, toMs, limit)
}

// foreignGPUs is ForeignGPUs by query q, foreignSQL's columns and
// placeholders.
func (s *Ledger) foreignGPUs(ctx context.Context, q string, fromMs, toMs int64, limit int) ([]ForeignGPU, error) {
	if limit <= 0 || limit > MaxForeignGPUs {
		limit = MaxForeignGPUs
	}
	rows, err := s.db.QueryContext(ctx, q, packFloor(fromMs), toMs)
	byGPU := map[int64]*ForeignGPU{}
	err = eachRow(rows, err, func(r batchRows) error {
		var gid int64
		var f ForeignGPU
		var idx sql.NullInt64
		var data []byte
		if err := r.Scan(&gid, &f.Cluster, &f.Node, &idx, &data); err != nil {
			return err
		}
		return eachPackedIn(data, gid, fromMs, toMs, func(r *sampleRow) error {
			if n, _ := r.num(colForeign); n <= 0 {
				return nil
			}
			t := r.ints[colT]
			g := byGPU[gid]
			if g == nil {
				f.Index, f.First, f.Last = ptrInt(idx), t, t
				g = &f
				byGPU[gid] = g
			}
			g.Samples++
			g.First, g.Last = min(g.First, t), max(g.Last, t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read foreign processes: %w", translate(err))
	}
	// By GPU first, so that a tie the order below leaves is the ledger's.
	gids := slices.Sorted(maps.Keys(byGPU))
	out := make([]ForeignGPU, 0, len(gids))
	for _, gid := range gids {
		out = append(out, *byGPU[gid])
	}
	slices.SortStableFunc(out, func(a, b ForeignGPU) int {
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
