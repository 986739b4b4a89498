package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// HourAllocs reads the same cluster-hours from rollup_hourly_sum as from
// rollup_hourly, each hour summed over nodes (and ignored rows, as
// sreport counts them), within the window and the clusters asked.
func TestHourAllocs(t *testing.T) {
	s := readFixture(t)
	for _, c := range []struct {
		name     string
		clusters []string
		from, to int64
		want     []HourAlloc
	}{
		{"all", nil, 0, 3 * 3600, []HourAlloc{{3600, "c1", 4000}, {7200, "c1", 5300}}},
		{"second hour", []string{"c1"}, 7200, 3 * 3600, []HourAlloc{{7200, "c1", 5300}}},
		{"other cluster", []string{"c2"}, 0, 3 * 3600, nil},
		{"before", nil, 0, 3600, nil},
	} {
		for _, sums := range []bool{false, true} {
			var got []HourAlloc
			if err := s.HourAllocs(context.Background(), c.clusters, c.from, c.to, sums, func(h HourAlloc) { got = append(got, h) }); err != nil {
				t.Fatalf("%s (sums %v): %v", c.name, sums, err)
			}
			// GROUP BY gives no order on PostgreSQL.
			slices.SortFunc(got, func(a, b HourAlloc) int { return cmp.Compare(a.Hour, b.Hour)*2 + strings.Compare(a.Cluster, b.Cluster) })
			if d := gocmp.Diff(c.want, got); d != "" {
				t.Errorf("%s (sums %v): -want +got\n%s", c.name, sums, d)
			}
		}
	}
}
