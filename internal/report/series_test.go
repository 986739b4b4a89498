package report

import (
	"context"
	"database/sql"
	"testing"
	"time"
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
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO samples(gpu_id, t_ms, interval_ms, job, restart, idle, util, mem_used_mib, power_mw)
 SELECT gpu_id, ?, 5000, ?, 0, ?, ?, ?, 300000 FROM job_gpus WHERE job = (SELECT id FROM jobs WHERE job_id = ?)`)
	if err != nil {
		t.Fatal(err)
	}
	// Job 41: util 0 for the first 10 % of each hour (idle), 100 after;
	// memory peaks at 1000 MiB once.
	n41 := 0
	for ts := t0; ts < end; ts += 5 {
		util, idle := 100, false
		if (ts-t0)%3600 < 360 {
			util, idle = 0, true
		}
		mem := 500
		if ts == t0+77*3600 {
			mem = 1000
		}
		if _, err := ins.Exec(ts*1000, 41, idle, util, mem, 41); err != nil {
			t.Fatal(err)
		}
		n41++
	}
	// Job 42: 120 samples, kept one point each.
	for ts := t0; ts < t0+600; ts += 5 {
		if _, err := ins.Exec(ts*1000, 42, false, 40, 100, 42); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE job_gpus SET agg_seq = NULL`); err != nil {
		t.Fatal(err)
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
