package web

import (
	"context"
	"math"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// capacityLevel is the clusters' GPU capacity per period in GPU-hours
// (report cluster's REPORTED, docs/utilization.md), to draw over the
// allocated bars; nil when Slurm's side was never read (ingest.sacctmgr
// off) or the window is longer than report cluster computes. A period
// without capacity recorded is NaN: no segment. The line is an extra: an
// error computing it is logged and the page is drawn without it.
func (h *Handler) capacityLevel(ctx context.Context, c *conn, q *query, per timespec.Period) *barSeries {
	rows, err := c.rep.ClusterUtilization(ctx, report.ClusterRequest{Window: q.hours, Period: per, Scope: q.scope, Now: h.o.Now()})
	if err != nil && !report.IsBadInput(err) && ctx.Err() == nil {
		h.o.Log.Warn("GPU capacity line left out of the usage chart", "err", err)
	}
	if err != nil || len(rows) == 0 {
		return nil
	}
	bs := timespec.Buckets(q.hours, per)
	at := make(map[string]int, len(bs))
	vals := make([]float64, len(bs))
	for i, b := range bs {
		at[b.Label], vals[i] = i, math.NaN()
	}
	for _, r := range rows {
		i, ok := at[r.Bucket.Label]
		if !ok {
			continue
		}
		if math.IsNaN(vals[i]) {
			vals[i] = 0
		}
		vals[i] += float64(r.Reported) / 3600
	}
	return &barSeries{Name: "GPU capacity (Slurm)", Color: capacityColor, Values: vals}
}
