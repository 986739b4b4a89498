package truth

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A 10 s sample of a job allocated [100 s, 105 s) at 50%: only the 5 s
// inside the allocation count, at their share of the energy.
func TestAddSample(t *testing.T) {
	base := Sample{T: 100_000, Interval: 10_000, Start: 100_000, End: 105_000, HasEnd: true, Util: 50, EnergyDelta: 1000, EnergyKnown: true}
	with := func(f func(*Sample)) Sample { s := base; f(&s); return s }
	tests := []struct {
		name string
		s    Sample
		want Usage
	}{
		{"cut at the end", base, Usage{Samples: 1, SampleS: 5, AgentSampleS: 10, UsedS: 2.5, EnergyMJ: 500}},
		{"open job counts the whole interval", with(func(s *Sample) { s.HasEnd = false }),
			Usage{Samples: 1, SampleS: 10, AgentSampleS: 10, UsedS: 5, EnergyMJ: 1000}},
		{"cut at the start", with(func(s *Sample) { s.T, s.Start, s.End = 95_000, 98_000, 200_000 }),
			Usage{Samples: 1, SampleS: 7, AgentSampleS: 10, UsedS: 3.5, EnergyMJ: 700}},
		{"idle counts its part and whole interval", with(func(s *Sample) { s.Idle = true }),
			Usage{Samples: 1, SampleS: 5, AgentSampleS: 10, UsedS: 2.5, IdleS: 5, AgentIdleS: 10, EnergyMJ: 500}},
		{"lost holds no values", with(func(s *Sample) { s.Lost = true }), Usage{Samples: 1, SampleS: 5, AgentSampleS: 10}},
		{"energy unknown after a gap", with(func(s *Sample) { s.EnergyKnown = false }), Usage{Samples: 1, SampleS: 5, AgentSampleS: 10, UsedS: 2.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u Usage
			u.AddSample(tt.s)
			if d := cmp.Diff(tt.want, u); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}
