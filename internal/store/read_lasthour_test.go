package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/google/go-cmp/cmp"
)

// windowFixture is a ledger of three nodes (two of one name, in two
// clusters) and seven GPUs, sampled every 10 s for two hours from 01:00
// with gaps: a job shared by two GPUs, samples without utilization, a
// GPU without index, one sampled only before 01:30, one never.
func windowFixture(t *testing.T) *Ledger {
	t.Helper()
	rnd := rand.New(rand.NewPCG(35, 1))
	var vals []string
	for gid := int64(1); gid <= 6; gid++ {
		for i := range 720 {
			tms := int64(3_600_000 + i*10_000)
			switch {
			case gid == 2 && i >= 100 && i < 160, // ten minutes of gap
				gid == 3 && i%7 == 3, // a sample lost now and then
				gid == 5 && i >= 180: // the node stopped at 01:30
				continue
			}
			job, jobs := "0", "NULL"
			switch {
			case gid <= 2 && i >= 50 && i < 400:
				// One job on both GPUs of n1, the second sharing GPU 2.
				job = "100"
				if gid == 2 && i >= 300 {
					jobs = `'[{"job":100,"restart":0,"share":0.5},{"job":101,"restart":0,"share":0.5}]'`
				}
			case gid == 4 && i%200 < 150:
				job = fmt.Sprint(200 + i/200)
			}
			util, missing := fmt.Sprint(rnd.IntN(101)), "NULL"
			if rnd.IntN(10) == 0 {
				util, missing = "NULL", "'util'"
			}
			vals = append(vals, fmt.Sprintf("(%d, %d, 10000, %s, %s, %s, %d, %s)", gid, tms, job, jobs, util, 100+rnd.IntN(200), missing))
		}
	}
	return ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name) VALUES (1, 'c1', 'n1'), (2, 'c1', 'n2'), (3, 'c2', 'n1')`,
		// Ids out of the nodes' order, so that the ledger's order of GPUs
		// and the read's (by id) differ.
		`INSERT INTO gpus(id, uuid, node_id, idx) VALUES (1, 'GPU-n1-1', 1, 1), (2, 'GPU-n1-0', 1, 0), (3, 'GPU-n2-x', 2, NULL),
		 (4, 'GPU-c2-0', 3, 0), (5, 'GPU-n2-0', 2, 0), (6, 'GPU-c2-1', 3, 1), (7, 'GPU-idle', 2, 2)`,
		`INSERT INTO samples(gpu_id, t_ms, interval_ms, job, jobs, util, power_mw, missing) VALUES `+strings.Join(vals, ",\n"),
	)
}

// perGPUWindows is the read that fillLastHour made before EachGPUWindow:
// the samples export of each GPU in turn, the same bounds.
func perGPUWindows(t *testing.T, s *Ledger, from, to int64, maxPerGPU, maxGPUs int) map[string]GPUWindow {
	t.Helper()
	ctx := context.Background()
	nodes, err := s.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := s.GPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gpus = gpus[:min(len(gpus), maxGPUs)]
	out := map[string]GPUWindow{}
	full := errors.New("full")
	for _, g := range gpus {
		i := slices.IndexFunc(nodes, func(n NodeRow) bool { return n.ID == g.NodeID })
		w := GPUWindow{Cluster: nodes[i].Cluster, Node: nodes[i].Name, GPU: g}
		err := s.ExportSamples(ctx, w.Node, g, from, to, func(vals []any) error {
			if len(w.Samples) >= maxPerGPU {
				return full
			}
			ws := WindowSample{T: vals[3].(int64), Job: vals[5].(int64)}
			ws.Util, ws.HasUtil = vals[8].(int64)
			w.Samples = append(w.Samples, ws)
			return nil
		})
		if err != nil && !errors.Is(err, full) {
			t.Fatal(err)
		}
		if len(w.Samples) > 0 {
			out[g.UUID] = w
		}
	}
	return out
}

// oneReadWindows is EachGPUWindow's GPUs by uuid, checked to come by id.
func oneReadWindows(t *testing.T, s *Ledger, from, to int64, maxPerGPU, maxGPUs int) map[string]GPUWindow {
	t.Helper()
	out := map[string]GPUWindow{}
	last := int64(0)
	err := s.EachGPUWindow(context.Background(), from, to, maxPerGPU, maxGPUs, func(w *GPUWindow) error {
		if w.GPU.ID <= last {
			t.Errorf("GPU %d after GPU %d: want them by id, each once", w.GPU.ID, last)
		}
		last = w.GPU.ID
		c := *w
		c.Samples = slices.Clone(w.Samples)
		out[w.GPU.UUID] = c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEachGPUWindowEqualsPerGPUReads: the one read gives each GPU the
// samples, jobs and utilization that reading its samples alone gives,
// over fixed and random windows and bounds.
func TestEachGPUWindowEqualsPerGPUReads(t *testing.T) {
	s := windowFixture(t)
	type window struct {
		from, to          int64
		maxPerGPU, maxGPU int
	}
	cases := map[string]window{
		"all":                       {0, 1 << 40, 3600, 100},
		"the last hour":             {2 * 3_600_000, 3 * 3_600_000, 3600, 100},
		"edges on packs":            {3_900_000, 4_800_000, 3600, 100},
		"edges inside packs":        {3_912_345, 4_823_456, 3600, 100},
		"before any sample":         {0, 3_600_000, 3600, 100},
		"after every sample":        {3 * 3_600_000, 4 * 3_600_000, 3600, 100},
		"five samples a GPU":        {0, 1 << 40, 5, 100},
		"every GPU when as many":    {0, 1 << 40, 3600, 7},
		"a window of one sample":    {4_000_000, 4_000_001, 3600, 100},
		"a window of no sample 1ms": {4_000_001, 4_000_002, 3600, 100},
	}
	rnd := rand.New(rand.NewPCG(35, 2))
	for i := range 30 {
		from := 3_000_000 + rnd.Int64N(8_000_000)
		cases[fmt.Sprintf("random %02d", i)] = window{from, from + rnd.Int64N(4_000_000), 1 + rnd.IntN(400), 100}
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			want := perGPUWindows(t, s, w.from, w.to, w.maxPerGPU, w.maxGPU)
			got := oneReadWindows(t, s, w.from, w.to, w.maxPerGPU, w.maxGPU)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-per GPU +one read):\n%s", diff)
			}
		})
	}
	// The fixture has what the comparison needs: shared jobs, missing
	// utilization and a GPU without index in the window.
	all := oneReadWindows(t, s, 0, 1<<40, 3600, 100)
	var shared, noUtil bool
	for _, ws := range all["GPU-n1-0"].Samples {
		shared = shared || ws.Job == 100 && ws.T >= 3_600_000+300*10_000
	}
	for _, ws := range all["GPU-n2-x"].Samples {
		noUtil = noUtil || !ws.HasUtil
	}
	if len(all) != 6 || !shared || !noUtil || all["GPU-n2-x"].GPU.Index != nil {
		t.Fatalf("fixture: %d GPUs with samples, shared %v, missing util %v: want 6, true, true", len(all), shared, noUtil)
	}
}

// TestEachGPUWindowBounds: at most maxGPUs GPUs (those with samples in
// the window, by id) and maxPerGPU samples each, the first ones; an error
// from fn ends the read as it is.
func TestEachGPUWindowBounds(t *testing.T) {
	s := windowFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name              string
		from              int64
		maxPerGPU, maxGPU int
		want              []string
	}{
		{"two GPUs", 0, 3, 2, []string{"1:3600000,3610000,3620000", "2:3600000,3610000,3620000"}},
		{"GPUs without samples in the window do not count", 2 * 3_600_000, 1, 5, []string{"1:7200000", "2:7200000", "3:7210000", "4:7200000", "6:7200000"}},
		{"no GPU", 0, 3, 0, nil},
		{"no sample", 0, 0, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := s.EachGPUWindow(ctx, tc.from, 1<<40, tc.maxPerGPU, tc.maxGPU, func(w *GPUWindow) error {
				var ts []string
				for _, ws := range w.Samples {
					ts = append(ts, fmt.Sprint(ws.T))
				}
				got = append(got, fmt.Sprintf("%d:%s", w.GPU.ID, strings.Join(ts, ",")))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	stop := errors.New("board full")
	calls := 0
	err := s.EachGPUWindow(ctx, 0, 1<<40, 10, 10, func(*GPUWindow) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("an error from fn: %v after %d GPUs, want it as it is after 1", err, calls)
	}
}

// BenchmarkLastHour compares the board's fill at start read GPU by GPU
// (as it was) and in one read, over an hour of samples every 10 s of
// 1,000 and 10,000 GPUs (8 a node) ending now, written as packs once per
// size. The two alternate for three rounds (names #01, #02), so that a
// busy machine slows both alike and their ratio holds:
//
//	go test -run '^$' -bench LastHour -benchtime 3x ./internal/store/
func BenchmarkLastHour(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		s, want := lastHourLedger(b, n, 0)
		ctx := context.Background()
		perGPU := func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				got := 0
				gpus, err := s.GPUs(ctx)
				if err != nil {
					b.Fatal(err)
				}
				for _, g := range gpus {
					got0 := got
					err := s.ExportSamples(ctx, "n", g, lastHourNow-3_600_000, lastHourNow, func([]any) error {
						if got-got0 >= 3600 {
							return errStopSamples
						}
						got++
						return nil
					})
					if err != nil && !errors.Is(err, errStopSamples) {
						b.Fatal(err)
					}
				}
				if got != want {
					b.Fatalf("%d samples, want %d", got, want)
				}
			}
		}
		oneRead := func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				got := 0
				err := s.EachGPUWindow(ctx, lastHourNow-3_600_000, lastHourNow, 3600, 100_000, func(w *GPUWindow) error {
					got += len(w.Samples)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if got != want {
					b.Fatalf("%d samples, want %d", got, want)
				}
			}
		}
		for range 3 {
			b.Run(fmt.Sprintf("gpus=%d/per-gpu", n), perGPU)
			b.Run(fmt.Sprintf("gpus=%d/one-read", n), oneRead)
		}
	}
}

// reportCPU reports the process's CPU time per op (cpu-ms/op) when the
// func it returns runs: on a machine others share it varies less than
// the wall time.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			b.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64(cpu()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}

// lastHourNow is the benchmark's now: 28 November 2026, 12:00:05 UTC, a
// few seconds into a pack.
var lastHourNow = time.Date(2026, 11, 28, 12, 0, 5, 0, time.UTC).UnixMilli()

// lastHourLedger writes a ledger of n GPUs' hour before lastHourNow (and
// the pack that straddles its start) and returns it with the count of
// samples in that hour. days adds that many days of empty packs before
// the hour, as a month's partition holds them, for the planner to see.
func lastHourLedger(b *testing.B, n, days int) (*Ledger, int) {
	b.Helper()
	ctx := context.Background()
	l := ledgerdb.NewLedger(b)
	now := func() time.Time { return time.UnixMilli(lastHourNow) }
	w, err := Open(ctx, Options{Path: l.Path, URL: l.URL, Now: now})
	if err != nil {
		b.Fatal(err)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("%v\n%s", err, q)
		}
	}
	const perNode = 8
	for node := range n / perNode {
		exec(`INSERT INTO nodes(id, cluster, name) VALUES (?, 'c1', ?)`, int64(node+1), fmt.Sprintf("gpu%05d", node))
	}
	rnd := rand.New(rand.NewPCG(35, 3))
	from := packStart(lastHourNow - 3_600_000)
	want := 0
	var rows []sampleRow
	for gid := int64(1); gid <= int64(n); gid++ {
		exec(`INSERT INTO gpus(id, uuid, node_id, idx, model) VALUES (?, ?, ?, ?, 'NVIDIA H100 80GB HBM3')`,
			gid, fmt.Sprintf("GPU-%08d", gid), (gid-1)/perNode+1, (gid-1)%perNode)
		energy := rnd.Int64N(1 << 40)
		job := 1000 + gid/4
		for t0 := from; t0 < lastHourNow; t0 += samplePackMs {
			rows = rows[:0]
			for t := t0; t < min(t0+samplePackMs, lastHourNow); t += 10_000 {
				var r sampleRow
				util := rnd.Int64N(101)
				power := 100_000 + rnd.Int64N(500_000)
				energy += power * 10
				for col, v := range map[int]int64{colGPU: gid, colT: t, colInterval: 10_000, colJob: job, colUtil: util,
					colMemUtil: util / 2, colMemUsed: 20_000 + rnd.Int64N(60_000), colPower: power, colEnergy: energy,
					colTemp: 40 + rnd.Int64N(40), colSMClock: 1980} {
					r.put(col, v)
				}
				rows = append(rows, r)
				if t >= lastHourNow-3_600_000 {
					want++
				}
			}
			data, _, err := mergePack(nil, gid, rows)
			if err != nil {
				b.Fatal(err)
			}
			last := rows[len(rows)-1].ints[colT]
			exec(`INSERT INTO sample_packs(gpu_id, t0_ms, n, t1_ms, data) VALUES (?, ?, ?, ?, ?)`, gid, t0, int64(len(rows)), last+10_000, data)
		}
	}
	if days > 0 {
		// One statement, in the ledger, where a row each from Go would
		// take minutes at ten thousand GPUs.
		exec(`INSERT INTO sample_packs(gpu_id, t0_ms, n, t1_ms, data)
 WITH RECURSIVE ts(t) AS (SELECT CAST(? AS BIGINT) UNION ALL SELECT t + ? FROM ts WHERE t + ? < ?)
 SELECT g.id, ts.t, 0, ts.t + ?, ? FROM gpus g CROSS JOIN ts`,
			from-int64(days)*86_400_000, int64(samplePackMs), int64(samplePackMs), from, int64(samplePackMs), []byte{})
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if w.pg != nil {
		if _, err := w.db.ExecContext(ctx, `ANALYZE`); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	r, err := Open(ctx, Options{Path: l.Path, URL: l.URL, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r, want
}
