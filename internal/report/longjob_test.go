package report

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
)

// TestLongSeriesMatchesFold: a job long enough for its series to be
// summed by the database (seriesBins) gets the points and figures the
// sample-by-sample fold gives, shared samples included, running or
// ended.
func TestLongSeriesMatchesFold(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool
	}{{"ended", false}, {"running", true}} {
		t.Run(tc.name, func(t *testing.T) {
			j := reportfixture.LongJob{ID: 61, GPUs: 2, Seconds: 3 * 86400, Interval: 10, Running: tc.running}
			now := time.Unix(t0+j.Seconds+600, 0)
			db := openTest(t, reportfixture.BuildLongJob(t, j, now))
			ctx := context.Background()
			det, err := db.Job(ctx, "c1", JobSpec{ID: 61, Restart: -1}, now)
			if err != nil {
				t.Fatal(err)
			}
			from, to, allocEnd := det.Job.Start*1000, now.UnixMilli(), int64(math.MaxInt64)
			if det.Job.End != nil {
				to, allocEnd = *det.Job.End*1000+1, *det.Job.End*1000
			}
			for _, g := range det.GPUs {
				long, err := db.st.GPUSamplesAtLeast(ctx, g.gpuID, from, to, longSamples)
				if err != nil || !long {
					t.Fatalf("GPU %s: %v %v: want a long series", g.UUID, long, err)
				}
				fold, tot, err := db.series(ctx, g.gpuID, 61, 0, from, to, allocEnd, seriesPoints(len(det.GPUs)))
				if err != nil {
					t.Fatal(err)
				}
				want := g
				want.Series = fold
				fromSamples(&want, tot)
				approx := cmpopts.EquateApprox(1e-9, 1e-9)
				if d := cmp.Diff(want, g, approx, cmp.AllowUnexported(GPUStat{})); d != "" {
					t.Errorf("GPU %s: database sums differ from the fold (-fold +sums):\n%s", g.UUID, d)
				}
				if tot.n != int(j.Seconds/j.Interval) {
					t.Errorf("GPU %s: %d samples counted, want %d", g.UUID, tot.n, j.Seconds/j.Interval)
				}
			}
		})
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
