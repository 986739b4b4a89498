package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUsageAddNeg(t *testing.T) {
	a := Usage{AllocS: 7200, UsedS: 3000.5, IdleS: 600, SampleS: 7100, EnergyMJ: 900_000, Jobs: 1}
	b := Usage{AllocS: 3600, UsedS: 100, IdleS: 0.25, SampleS: 3500, EnergyMJ: 1000, Jobs: 2}
	for _, tc := range []struct {
		name string
		add  []Usage
		want Usage
	}{
		{"nothing", nil, Usage{}},
		{"one", []Usage{a}, a},
		{"two", []Usage{a, b}, Usage{AllocS: 10800, UsedS: 3100.5, IdleS: 600.25, SampleS: 10600, EnergyMJ: 901_000, Jobs: 3}},
		{"taken back", []Usage{a, b, a.Neg()}, b},
		{"all taken back", []Usage{a, b, b.Neg(), a.Neg()}, Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Usage
			for _, u := range tc.add {
				got.Add(u)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("sum (-want +got):\n%s", d)
			}
		})
	}
}
