package report

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestSeriesBounded: a 152-hour job sampled every 5 s (109,440 samples a
// GPU) answers a series of at most MaxSeriesPoints points a GPU, while
// the figures from the samples stay exact.
func TestSeriesBounded(t *testing.T) {
	const hours = 152
	end := t0 + hours*3600
	now := time.Unix(end+3600, 0)
	path := buildLedger(t, []fxJob{
		{ID: 41, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: end},
		{ID: 42, User: "bob", Acct: "vision", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 600},
	}, now)
	// Job 41: a sample every 5 s on each of its GPUs, util 0 for the
	// first 10 % of each hour (idle), 100 after; memory peaks at 1000 MiB
	// once. Job 42: 120 samples, kept one point each.
	n41 := int((end - t0) / 5)
	reportfixture.RowSamples(t, path)
	ledgerdb.Tx(t, path, func(exec func(string, ...any)) {
		exec(`INSERT INTO samples(gpu_id, t_ms, interval_ms, job, restart, idle, util, mem_used_mib, power_mw)
 WITH RECURSIVE s(ts) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT ts + 5 FROM s WHERE ts + 5 < ?)
 SELECT g.gpu_id, s.ts * 1000, 5000, 41, 0, CASE WHEN (s.ts - ?) % 3600 < 360 THEN 1 ELSE 0 END,
        CASE WHEN (s.ts - ?) % 3600 < 360 THEN 0 ELSE 100 END, CASE WHEN s.ts = ? THEN 1000 ELSE 500 END, 300000
 FROM s, job_gpus g WHERE g.job = (SELECT id FROM jobs WHERE job_id = 41)`, t0, end, t0, t0, t0+77*3600)
		exec(`INSERT INTO samples(gpu_id, t_ms, interval_ms, job, restart, idle, util, mem_used_mib, power_mw)
 WITH RECURSIVE s(ts) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT ts + 5 FROM s WHERE ts + 5 < ?)
 SELECT g.gpu_id, s.ts * 1000, 5000, 42, 0, 0, 40, 100, 300000
 FROM s, job_gpus g WHERE g.job = (SELECT id FROM jobs WHERE job_id = 42)`, t0, t0+600)
		exec(`UPDATE job_gpus SET agg_seq = NULL`)
	})
	// Written by hand: packed and the writer's series buckets summed as
	// it would.
	reportfixture.PackRowSamples(t, path)
	if got := ledgerdb.Scalar[int64](t, path, `SELECT coalesce(sum(n), 0) FROM sample_packs`); got != int64(2*n41+120) {
		t.Fatalf("%d samples, want %d", got, 2*n41+120)
	}
	db := openTest(t, path)
	det, err := db.Job(context.Background(), "c1", JobSpec{ID: 41, Restart: -1}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(det.GPUs) != 2 {
		t.Fatalf("%d GPUs", len(det.GPUs))
	}
	for _, g := range det.GPUs {
		if len(g.Series) > MaxSeriesPoints || len(g.Series) < MaxSeriesPoints/2 {
			t.Errorf("GPU %s: %d points from %d samples, want at most %d", g.UUID, len(g.Series), n41, MaxSeriesPoints)
		}
		var covered float64
		peak := 0.0
		for _, p := range g.Series {
			covered += p.Interval
			if p.MemMiB != nil {
				peak = max(peak, *p.MemMiB)
			}
		}
		if want := float64(hours * 3600); covered != want {
			t.Errorf("points cover %v s, want %v", covered, want)
		}
		if peak != 1000 {
			t.Errorf("series memory peak %v MiB, want the single 1000 MiB sample", peak)
		}
		if g.Source != "samples" || g.UtilMean == nil || *g.UtilMean != 90 || g.IdleS != hours*360 || *g.MemMaxMiB != 1000 || *g.UtilMax != 100 {
			t.Errorf("figures from samples: source %s, mean %v, idle %v s, mem max %v, util max %v; want samples, 90, %d, 1000, 100",
				g.Source, deref(g.UtilMean), g.IdleS, deref(g.MemMaxMiB), deref(g.UtilMax), hours*360)
		}
	}
	det, err = db.Job(context.Background(), "c1", JobSpec{ID: 42, Restart: -1}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(det.GPUs[0].Series); got != 120 {
		t.Errorf("short job: %d points, want its 120 samples", got)
	}
	for _, p := range det.GPUs[0].Series {
		if p.Util == nil || *p.Util != 40 || p.Interval != 5 {
			t.Fatalf("short job point %+v, want the sample itself", p)
		}
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

func TestSeriesPoints(t *testing.T) {
	for _, tt := range []struct{ gpus, want int }{{0, 1000}, {1, 1000}, {8, 1000}, {16, 1000}, {32, 500}, {1000, 100}} {
		if got := seriesPoints(tt.gpus); got != tt.want {
			t.Errorf("seriesPoints(%d) = %d, want %d", tt.gpus, got, tt.want)
		}
	}
}
