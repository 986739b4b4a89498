package store

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

const bucketsQuery = `SELECT gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms,
 CAST(round(util_share_w_ms * 1000) AS INTEGER), power_w_ms, power_ms, util_max, mem_max, energy_mj, energy_n
 FROM series_buckets ORDER BY gpu_id, job, restart, bucket_ms`

// TestSeriesBucketsOnce: the writer's series buckets hold each sample
// once, whatever comes twice: the same segments again in the batch and in
// a later one leave them as they were; a deferred segment (whose samples
// come before stored ones, so that a stored sample's energy delta is
// taken again) moves them as the samples move; and they equal the
// buckets summed from the stored samples afresh (the migration's
// backfill), own and shared samples, idle, missing values and energy.
func TestSeriesBucketsOnce(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	t0 := time.Date(2026, 3, 2, 10, 3, 0, 0, time.UTC) // 3 minutes into a bucket
	const uuid = "GPU-00000000-0000-0000-0000-000000000001"
	seg := func(from, n int) []record.Sample {
		var out []record.Sample
		for i := from; i < from+n; i++ {
			s := record.Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), UUID: uuid,
				Jobs: []record.JobShare{{Job: 7, Share: 1, Idle: i%5 == 0}}, MemUsedMiB: u64(uint64(100 + i)),
				PowerMW: u32(uint32(50000 + 1000*i)), EnergyMJ: u64(uint64(1000 * i * i))}
			if i%4 != 0 {
				s.GPUUtil = u32(uint32(7 * i % 101))
			}
			if i%7 == 3 {
				s.Jobs = []record.JobShare{{Job: 7, Share: 0.3, Idle: true}, {Job: 8, Restart: 1, Share: 0.7}}
			}
			out = append(out, s)
		}
		return out
	}
	s := openTemp(t)
	now := t0.Add(2 * time.Hour)
	h := &record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}
	// Samples 40..79 first, then the deferred 0..39: the stored sample 40
	// had no energy delta (no reading before it) and gets one.
	later, deferred := seg(40, 40), seg(0, 40)
	batchOf(t, s, now, func(b *Batch) error {
		for _, j := range []record.JobShare{{Job: 7}, {Job: 8, Restart: 1}} {
			e := ev(record.JobStart, "n1", t0.Add(-time.Hour), 1)
			e.Job.ID, e.Job.RestartCount = j.Job, j.Restart
			e.Key = record.EventKey("c", j.Job, j.Restart, "n1", record.JobStart)
			if err := b.Event(e); err != nil {
				return err
			}
		}
		_, err := b.Segment(h, later)
		return err
	})
	batchOf(t, s, now, func(b *Batch) error {
		for range 2 {
			if _, err := b.Segment(h, deferred); err != nil {
				return err
			}
		}
		return nil
	})
	once := dump(t, s.db, bucketsQuery)
	if len(once) < 6 {
		t.Fatalf("%d buckets, want at least 6 (two jobs, 14 minutes):\n%v", len(once), once)
	}
	batchOf(t, s, now, func(b *Batch) error {
		for _, smp := range [][]record.Sample{later, deferred, seg(20, 40)} {
			if n, err := b.Segment(h, smp); err != nil || n != 0 {
				t.Errorf("segment again: %d new samples (%v), want 0", n, err)
			}
		}
		return nil
	})
	if d := cmp.Diff(once, dump(t, s.db, bucketsQuery)); d != "" {
		t.Errorf("buckets after the same samples again (-once +again):\n%s", d)
	}
	if err := s.RebuildSeriesBuckets(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(once, dump(t, s.db, bucketsQuery)); d != "" {
		t.Errorf("buckets kept by the writer differ from those summed from the samples (-writer +samples):\n%s", d)
	}
	if n := len(dumpSamples(t, s, func(vals []any) bool { return vals[colEnergyDelta] == nil })); n != 1 {
		t.Errorf("%d samples without an energy delta, want 1 (the first): the deferred segment's delta not taken again", n)
	}
}

// TestPruneSeriesBuckets: pruning samples deletes the buckets wholly
// before the cut and keeps the one it falls in, which readers leave for
// the samples after the pruned mark (Ledger.PrunedBefore).
func TestPruneSeriesBuckets(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	const uuid = "GPU-00000000-0000-0000-0000-000000000001"
	s := openTemp(t)
	var smp []record.Sample
	for i := range 90 { // 15 minutes: three buckets
		smp = append(smp, record.Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), UUID: uuid, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
	}
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		if err := b.Event(ev(record.JobStart, "n1", t0, 1)); err != nil {
			return err
		}
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}, smp)
		return err
	})
	cut := t0.Add(7 * time.Minute)
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		_, err := b.PruneSamples(cut)
		return err
	})
	got := dump(t, s.db, `SELECT bucket_ms, n FROM series_buckets ORDER BY bucket_ms`)
	want := []string{
		strconv.FormatInt(t0.Add(5*time.Minute).UnixMilli(), 10) + "|30",
		strconv.FormatInt(t0.Add(10*time.Minute).UnixMilli(), 10) + "|30",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("buckets after pruning at 10:07 (-want +got):\n%s", d)
	}
	if m, err := s.PrunedBefore(context.Background()); err != nil || m != cut.UnixMilli() {
		t.Errorf("pruned mark %d (%v), want %d", m, err, cut.UnixMilli())
	}
}

// TestPruneKeepsSeries: pruning the samples while keeping the series
// (store.series_retention) leaves every bucket of the job as it was, and
// the readers take them for the samples gone: the pruned mark is the
// buckets', a window of pruned samples counts as long (read from the
// buckets), and a bucket reaching past the job's end is not sent back to
// samples that are gone. Pruned together, as before: the buckets go and
// the readers see the samples' mark.
func TestPruneKeepsSeries(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	const uuid = "GPU-00000000-0000-0000-0000-000000000001"
	u32 := func(v uint32) *uint32 { return &v }
	cut := t0.Add(27 * time.Minute)
	tests := []struct {
		name       string
		seriesCut  time.Time
		wantMark   time.Time
		wantLong   bool
		wantPast   time.Duration // BucketPastEnd from t0, the job ending at 10:12
		wantBucket int           // buckets left
	}{
		{name: "series kept", seriesCut: t0.Add(-time.Hour), wantMark: t0.Add(-time.Hour), wantLong: true, wantPast: 30 * time.Minute, wantBucket: 6},
		{name: "pruned together", seriesCut: cut, wantMark: cut, wantLong: false, wantPast: 30 * time.Minute, wantBucket: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTemp(t)
			var smp []record.Sample
			for i := range 180 { // 30 minutes: six buckets
				smp = append(smp, record.Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), UUID: uuid,
					GPUUtil: u32(uint32(i % 101)), Jobs: []record.JobShare{{Job: 5, Share: 1, Idle: i%3 == 0}}})
			}
			batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
				if err := b.Event(ev(record.JobStart, "n1", t0, 1)); err != nil {
					return err
				}
				_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}, smp)
				return err
			})
			var gid int64
			if err := s.db.QueryRow(`SELECT id FROM gpus`).Scan(&gid); err != nil {
				t.Fatal(err)
			}
			from, to := t0.UnixMilli(), t0.Add(30*time.Minute).UnixMilli()
			bins := func() []SampleBin {
				t.Helper()
				got, err := s.JobBucketBins(ctx, gid, 5, 0, from, from, to, BucketMs)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			before := bins()
			batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
				n, err := b.PruneSamplesKeepSeries(cut, tt.seriesCut)
				if err == nil && n != 162 {
					t.Errorf("%d samples pruned, want 162", n)
				}
				return err
			})
			if n := len(dump(t, s.db, `SELECT 1 FROM series_buckets`)); n != tt.wantBucket {
				t.Errorf("%d buckets left, want %d", n, tt.wantBucket)
			}
			if tt.wantBucket == len(before) {
				if d := cmp.Diff(before, bins()); d != "" {
					t.Errorf("buckets after pruning the samples (-before +after):\n%s", d)
				}
			}
			if m, err := s.PrunedBefore(ctx); err != nil || m != tt.wantMark.UnixMilli() {
				t.Errorf("pruned mark %d (%v), want %d", m, err, tt.wantMark.UnixMilli())
			}
			if long, err := s.GPUSamplesAtLeast(ctx, gid, from, to, 20_000); err != nil || long != tt.wantLong {
				t.Errorf("GPUSamplesAtLeast = %v (%v), want %v", long, err, tt.wantLong)
			}
			// Over the samples kept, the count alone answers.
			if long, err := s.GPUSamplesAtLeast(ctx, gid, cut.UnixMilli(), to, 20_000); err != nil || long {
				t.Errorf("GPUSamplesAtLeast after the cut = %v (%v), want false", long, err)
			}
			lo := -floorMs(-max(from, tt.wantMark.UnixMilli()))
			past, err := s.BucketPastEnd(ctx, gid, 5, 0, lo, to, t0.Add(12*time.Minute).UnixMilli())
			if err != nil || past != t0.Add(tt.wantPast).UnixMilli() {
				t.Errorf("BucketPastEnd = %d (%v), want %d", past, err, t0.Add(tt.wantPast).UnixMilli())
			}
		})
	}
}

// floorMs is t floored to a whole bucket.
func floorMs(t int64) int64 {
	r := t % BucketMs
	if r < 0 {
		r += BucketMs
	}
	return t - r
}

// TestPrunedMarkFollowsSamples: once the series are pruned with the
// samples again, the readers' mark is the samples', also when a dropped
// month (PostgreSQL) moved it and the batch itself found nothing left to
// delete.
func TestPrunedMarkFollowsSamples(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := openTemp(t)
	var smp []record.Sample
	for i := range 30 {
		smp = append(smp, record.Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), UUID: "GPU-00000000-0000-0000-0000-000000000001",
			Jobs: []record.JobShare{{Job: 5, Share: 1}}})
	}
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		if err := b.Event(ev(record.JobStart, "n1", t0, 1)); err != nil {
			return err
		}
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}, smp)
		return err
	})
	mark := func() int64 {
		t.Helper()
		m, err := s.PrunedBefore(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	kept, cut := t0.Add(-time.Hour), t0.Add(2*time.Minute)
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		_, err := b.PruneSamplesKeepSeries(cut, kept)
		return err
	})
	if m := mark(); m != kept.UnixMilli() {
		t.Fatalf("mark with the series kept: %d, want %d", m, kept.UnixMilli())
	}
	dropped := t0.Add(10 * time.Minute) // every sample is before it
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		if _, err := b.exec(notePrunedSQL, prunedKey, strconv.FormatInt(dropped.UnixMilli(), 10)); err != nil {
			return err
		}
		for _, q := range []string{`DELETE FROM sample_packs`, `DELETE FROM series_buckets`} {
			if _, err := b.exec(q); err != nil {
				return err
			}
		}
		_, err := b.PruneSamples(dropped)
		return err
	})
	if m := mark(); m != dropped.UnixMilli() {
		t.Errorf("mark pruned together after a dropped month: %d, want the samples' %d", m, dropped.UnixMilli())
	}
}
