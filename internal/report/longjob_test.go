package report

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestLongSeriesMatchesFold: a job long enough for its series to be
// read from the writer's 5-minute buckets (seriesBins) gets the figures
// the sample-by-sample fold gives, shared samples included, running,
// ended, or with its first samples pruned at a time inside a bucket. Its
// points are those of the same sums over the samples on the buckets'
// grid (stretches of whole buckets), and those sums on the fold's own
// grid are the fold's points: the chart differs from the fold's only by
// its stretches' granularity.
func TestLongSeriesMatchesFold(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool
		prune   int64 // seconds after the start, 0 for none
	}{{"ended", false, 0}, {"running", true, 0}, {"pruned", false, 6*3600 + 123}} {
		t.Run(tc.name, func(t *testing.T) {
			j := reportfixture.LongJob{ID: 61, GPUs: 2, Seconds: 3 * 86400, Interval: 10, Running: tc.running}
			now := time.Unix(t0+j.Seconds+600, 0)
			path := reportfixture.BuildLongJob(t, j, now)
			if tc.prune > 0 {
				pruneSamples(t, path, time.Unix(t0+tc.prune, 0), now)
			}
			db := openTest(t, path)
			ctx := context.Background()
			det, err := db.Job(ctx, "c1", JobSpec{ID: 61, Restart: -1}, now)
			if err != nil {
				t.Fatal(err)
			}
			from, to, allocEnd := det.Job.Start*1000, now.UnixMilli(), int64(math.MaxInt64)
			if det.Job.End != nil {
				to, allocEnd = *det.Job.End*1000+1, *det.Job.End*1000
			}
			n := seriesPoints(len(det.GPUs))
			approx := cmpopts.EquateApprox(1e-9, 1e-9)
			for _, g := range det.GPUs {
				long, err := db.st.GPUSamplesAtLeast(ctx, g.gpuID, from, to, longSamples)
				if err != nil || !long {
					t.Fatalf("GPU %s: %v %v: want a long series", g.UUID, long, err)
				}
				fold, tot, err := db.series(ctx, g.gpuID, 61, 0, from, to, allocEnd, n)
				if err != nil {
					t.Fatal(err)
				}
				want := g
				want.Series = fold
				fromSamples(&want, tot)
				if d := cmp.Diff(want, g, approx, cmp.AllowUnexported(GPUStat{}), cmpopts.IgnoreFields(GPUStat{}, "Series")); d != "" {
					t.Errorf("GPU %s: figures from the buckets differ from the fold's (-fold +buckets):\n%s", g.UUID, d)
				}
				wantN := j.Seconds / j.Interval
				if tc.prune > 0 {
					wantN -= (tc.prune + j.Interval - 1) / j.Interval
				}
				if tot.n != int(wantN) {
					t.Errorf("GPU %s: %d samples counted, want %d", g.UUID, tot.n, wantN)
				}
				sums, _, err := db.longSeries(ctx, g.gpuID, 61, 0, from, to, allocEnd, foldGrid(from, to, n), false)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(fold, sums, approx); d != "" {
					t.Errorf("GPU %s: sums on the fold's grid differ from the fold (-fold +sums):\n%s", g.UUID, d)
				}
				gr := bucketGrid(from, to, n)
				sums, _, err = db.longSeries(ctx, g.gpuID, 61, 0, from, to, allocEnd, gr, false)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(sums, g.Series, approx); d != "" {
					t.Errorf("GPU %s: points from the buckets differ from the samples' sums on their grid (-samples +buckets):\n%s", g.UUID, d)
				}
				if len(g.Series) > n || len(g.Series) < n/2 || gr.span%store.BucketMs != 0 {
					t.Errorf("GPU %s: %d points of %d s, want whole buckets and %d to %d points", g.UUID, len(g.Series), gr.span/1000, n/2, n)
				}
				bins, err := db.st.JobBucketBins(ctx, g.gpuID, 61, 0, gr.origin, gr.origin, floorTo(to, store.BucketMs), gr.span)
				if err != nil || len(bins) < n/2 {
					t.Errorf("GPU %s: %d stretches of buckets (%v): the series was not read from the buckets", g.UUID, len(bins), err)
				}
			}
		})
	}
}

// pruneSamples prunes the ledger's samples before cut, as the writer's
// retention does.
func pruneSamples(t *testing.T, path string, cut, now time.Time) {
	t.Helper()
	o := store.Options{Path: path}
	if strings.HasPrefix(path, "postgres") {
		o = store.Options{URL: path}
	}
	st, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PruneSamples(cut); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLongJobDetail reads the detail of the worst job: 8
// GPUs × 20 days sampled every 10 s (1.38 M samples), still running, so
// that its figures come from the samples too. "fold" is each GPU's
// samples handed to Go one by one, as every job was read before
// (issue 29); "detail" is the job as it is read now. docs/performance.md.
func BenchmarkLongJobDetail(b *testing.B) {
	j := reportfixture.LongJob{ID: 77, GPUs: 8, Seconds: 20 * 86400, Interval: 10, Running: true}
	now := time.Unix(t0+j.Seconds, 0)
	path := reportfixture.BuildLongJob(b, j, now)
	db, err := OpenDB(context.Background(), path, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	det, err := db.Job(ctx, "c1", JobSpec{ID: 77, Restart: -1}, now)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fold", func(b *testing.B) {
		for b.Loop() {
			for _, g := range det.GPUs {
				if _, _, err := db.series(ctx, g.gpuID, 77, 0, t0*1000, now.UnixMilli(), math.MaxInt64, seriesPoints(len(det.GPUs))); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("detail", func(b *testing.B) {
		for b.Loop() {
			det, err := db.Job(ctx, "c1", JobSpec{ID: 77, Restart: -1}, now)
			if err != nil {
				b.Fatal(err)
			}
			if len(det.GPUs) != 8 || len(det.GPUs[0].Series) == 0 {
				b.Fatalf("%d GPUs", len(det.GPUs))
			}
		}
	})
}
