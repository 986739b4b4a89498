package report

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestSeriesFolded: once a job's samples are pruned, its page draws the
// same series from the 5-minute buckets kept longer
// (store.series_retention); pruned with the samples, as by default, it
// has none.
func TestSeriesFolded(t *testing.T) {
	for _, tc := range []struct {
		name string
		kept bool
	}{{"series kept", true}, {"pruned together", false}} {
		t.Run(tc.name, func(t *testing.T) {
			j := reportfixture.LongJob{ID: 61, GPUs: 2, Seconds: 3 * 86400, Interval: 10}
			now := time.Unix(t0+j.Seconds+600, 0)
			path := reportfixture.BuildLongJob(t, j, now)
			series := func() [][]Point {
				t.Helper()
				det, err := openTest(t, path).Job(context.Background(), "c1", JobSpec{ID: 61, Restart: -1}, now)
				if err != nil {
					t.Fatal(err)
				}
				var out [][]Point
				for _, g := range det.GPUs {
					out = append(out, g.Series)
				}
				return out
			}
			before := series()
			if len(before) != 2 || len(before[0]) < 100 {
				t.Fatalf("series before pruning: %d GPUs, want 2 with 100 points or more", len(before))
			}
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
			keep := now
			if tc.kept {
				keep = time.Unix(t0-86400, 0)
			}
			if _, err := b.PruneSamplesKeepSeries(now, keep); err != nil {
				b.Rollback()
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			want := before
			if !tc.kept {
				want = [][]Point{nil, nil}
			}
			if d := cmp.Diff(want, series()); d != "" {
				t.Errorf("series after pruning every sample (-want +got):\n%s", d)
			}
		})
	}
}
