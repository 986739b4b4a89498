package ingest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// The samples of a job × node are counted again when its window changes:
// an end that comes a pass after samples that run past it cuts them.
func TestRecountEndAfterSamples(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0),
		busySeg(t, 1, t0, 12))
	e.pass(t, s, t0.Add(2*time.Minute))
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(time.Minute), 0))
	e.pass(t, s, t0.Add(time.Hour))
	alloc, used := allocUsed(t, s)
	sampled := query[float64](t, s, `SELECT sum(sample_s) FROM job_hours`)
	if alloc != 60 || used != 60 || sampled != 60 {
		t.Errorf("alloc %v used %v sampled %v, want 60 each (the samples after the end at 00:01 do not count)", alloc, used, sampled)
	}
	checkRollups(t, s)
}

// Samples that came after housekeeping closed the job at its last sample
// count once the epilog's later end comes.
func TestRecountLateSamplesAfterEstimatedEnd(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0),
		busySeg(t, 1, t0, 6))
	e.pass(t, s, t0.Add(3*time.Hour)) // closed at the last sample (00:00:50)
	e.put(t, busySeg(t, 2, t0.Add(time.Minute), 60))
	e.pass(t, s, t0.Add(3*time.Hour+time.Minute))
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(11*time.Minute), 0))
	e.pass(t, s, t0.Add(3*time.Hour+2*time.Minute))
	alloc, used := allocUsed(t, s)
	if alloc != 660 || used != 660 {
		t.Errorf("alloc %v used %v, want 660 each (samples cover 00:00-00:11 at 100 %%)", alloc, used)
	}
	checkRollups(t, s)
}

// A deferred segment's sample between two stored ones of one GPU: the
// later stored sample's energy delta is taken again against it.
func TestRecountDeferredEnergy(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	mj := func(v uint64) *uint64 { return &v }
	a := busy("gpu001", 0, t0.Add(time.Minute), 77)
	a.EnergyMJ = mj(1_000_000)
	c := busy("gpu001", 0, t0.Add(time.Minute+20*time.Second), 77)
	c.EnergyMJ = mj(1_200_000)
	b := busy("gpu001", 0, t0.Add(time.Minute+10*time.Second), 77)
	b.EnergyMJ = mj(1_100_000)
	other := busy("gpu001", 1, t0.Add(time.Minute+10*time.Second), 88)
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0),
		segFile(t, "gpu001", 2, 10, []record.Sample{a, c}),
		segFile(t, "gpu001", 1, 10, []record.Sample{b, other}))
	e.pass(t, s, t0.Add(2*time.Minute)) // segment 1 waits for job 88's event
	e.put(t, evFile(t, "gpu001", 88, 0, record.JobStart, t0, 1))
	e.pass(t, s, t0.Add(3*time.Minute))
	if en := query[int64](t, s, `SELECT energy_mj FROM jobs WHERE job_id = 77`); en != 200_000 {
		t.Errorf("job energy %d mJ, want 200000 (the counter rose 200000 over its samples)", en)
	}
	var d any
	for _, smp := range storedSamples(t, s) {
		if smp["t_ms"] == c.Time.UnixMilli() && smp["energy_mj"] == int64(1200000) {
			d = smp["energy_delta_mj"]
		}
	}
	if d != int64(100_000) {
		t.Errorf("stored sample's delta %d mJ, want 100000 (against the deferred reading)", d)
	}
	checkRollups(t, s)
}

// A start event that replaces an estimated start cuts the samples before
// it, which counted while the start had no bound.
func TestRecountStartReplacesEstimate(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(10*time.Minute), 0),
		busySeg(t, 1, t0, 60))
	e.pass(t, s, t0.Add(11*time.Minute))
	if used := query[float64](t, s, `SELECT used_gpu_s FROM jobs WHERE job_id = 77`); used != 600 {
		t.Fatalf("used %v before the start event, want 600 (no lower bound yet)", used)
	}
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0.Add(2*time.Minute), 0))
	e.pass(t, s, t0.Add(12*time.Minute))
	alloc, used := allocUsed(t, s)
	if alloc != 480 || used != 480 {
		t.Errorf("alloc %v used %v, want 480 each (00:02-00:10)", alloc, used)
	}
	checkRollups(t, s)
}

// Samples already pruned cannot be counted again: their hours keep what
// they had, and the job × node says so.
func TestRecountPrunedKeeps(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0),
		busySeg(t, 1, t0, 12))
	e.pass(t, s, t0.Add(3*time.Minute))
	ctx := context.Background()
	b, err := s.Begin(ctx, t0.Add(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.PruneSamples(t0.Add(time.Minute)); err != nil || n != 6 {
		b.Rollback()
		t.Fatalf("pruned %d samples (%v), want 6", n, err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(30*time.Second), 0))
	e.pass(t, s, t0.Add(4*time.Minute))
	// 00:00-00:30 inside; 00:30-01:00 pruned, cut to the 30 s allocated; 01:00-02:00 cut.
	if used := query[float64](t, s, `SELECT used_gpu_s FROM jobs WHERE job_id = 77`); used != 30 {
		t.Errorf("used %v, want 30 (the hour's used time held to its 30 s allocated, though its pruned samples are not counted again)", used)
	}
	if q := query[string](t, s, `SELECT quality FROM job_nodes`); !strings.Contains(q, "samples_pruned_not_recounted") {
		t.Errorf("quality %q does not say the pruned hours were not counted again", q)
	}
	checkRollups(t, s)
}

// busySeg is segment seq of gpu001 with n samples of GPU 0 at 100 % for
// job 77, every 10 s from from.
func busySeg(t *testing.T, seq uint64, from time.Time, n int) forged {
	t.Helper()
	return segFile(t, "gpu001", seq, 10, every(from, 10*time.Second, n, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) }))
}

// allocUsed is job 77's allocated and used GPU seconds.
func allocUsed(t *testing.T, s *store.Ledger) (alloc, used float64) {
	t.Helper()
	return query[float64](t, s, `SELECT alloc_gpu_s FROM jobs WHERE job_id = 77`), query[float64](t, s, `SELECT used_gpu_s FROM jobs WHERE job_id = 77`)
}

// checkRollups: the job totals, the job hours and every rollup hold the
// same used and sampled seconds and energy.
func checkRollups(t *testing.T, s *store.Ledger) {
	t.Helper()
	var sums [5][3]float64
	for i, q := range []string{
		`SELECT coalesce(sum(used_gpu_s), 0), coalesce(sum(idle_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM jobs`,
		`SELECT coalesce(sum(used_gpu_s), 0), coalesce(sum(idle_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM job_hours`,
		`SELECT coalesce(sum(used_gpu_s), 0), coalesce(sum(idle_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM rollup_hourly`,
		`SELECT coalesce(sum(used_gpu_s), 0), coalesce(sum(idle_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM rollup_daily`,
		`SELECT coalesce(sum(used_gpu_s), 0), coalesce(sum(idle_gpu_s), 0), coalesce(sum(energy_mj), 0) FROM rollup_monthly`,
	} {
		ledgerdb.Row(t, s.Path, q, nil, &sums[i][0], &sums[i][1], &sums[i][2])
	}
	for i := 1; i < len(sums); i++ {
		if diff := cmp.Diff(sums[0], sums[i]); diff != "" {
			t.Errorf("table %d differs from the job totals (used, idle, energy) (-jobs +table):\n%s", i, diff)
		}
	}
}

// cutUsage is what the samples of a generated cluster (a sample every
// interval on every GPU, one job each) add up to when cut to their jobs'
// stored allocations: used, idle and sampled seconds, energy.
func cutUsage(t *testing.T, s *store.Ledger) (used, idle, sampled float64, energy int64) {
	t.Helper()
	// Each sample's energy share is rounded here, not in SQL: a CAST to
	// an integer truncates on SQLite and rounds on PostgreSQL.
	type span struct{ start, end int64 }
	nodes := map[[2]int64][]span{} // a job run's nodes, by job id and restart
	ledgerdb.Query(t, s.Path, `SELECT j.job_id, j.restart, n.start, n.end FROM jobs j JOIN job_nodes n ON n.job = j.id`, nil, func(scan func(...any)) {
		var k [2]int64
		var sp span
		scan(&k[0], &k[1], &sp.start, &sp.end)
		nodes[k] = append(nodes[k], sp)
	})
	for _, smp := range storedSamples(t, s) {
		tms, interval := smp["t_ms"].(int64), smp["interval_ms"].(int64)
		u, _ := smp["util"].(int64)
		de, _ := smp["energy_delta_mj"].(int64)
		for _, n := range nodes[[2]int64{smp["job"].(int64), smp["restart"].(int64)}] {
			part := max(0, min(tms+interval, n.end*1000)-max(tms, n.start*1000))
			used += float64(u) * float64(part) / 100000
			if smp["idle"] == int64(1) {
				idle += float64(part) / 1000
			}
			sampled += float64(part) / 1000
			energy += int64(float64(de*part)/float64(interval) + 0.5)
		}
	}
	return used, idle, sampled, energy
}

// storedSamples are every sample the ledger holds, by GPU and time, as
// column name to value (nil for NULL).
func storedSamples(t *testing.T, s *store.Ledger) []map[string]any {
	t.Helper()
	cols := store.SampleColumns()
	var out []map[string]any
	err := s.StoredSamples(context.Background(), func(vals []any) error {
		m := make(map[string]any, len(cols))
		for i, c := range cols {
			m[c] = vals[i]
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
