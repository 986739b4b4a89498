package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJobSamples(t *testing.T) {
	s := readFixture(t)
	shared := `[{"job":100,"restart":0,"share":0.5,"idle":true}]`
	first := SampleRow{TMs: 3600000, IntervalMs: 1000, Job: 100, Util: pi(50), MemUsedMiB: pi(1000), PowerMW: pi(200000), EnergyDeltaMJ: pi(200)}
	second := SampleRow{TMs: 3601000, IntervalMs: 1000, Job: 100, Jobs: &shared, Idle: true}
	last := SampleRow{TMs: 7200000, IntervalMs: 1000, Job: 100, Util: pi(60), MemUsedMiB: pi(900), PowerMW: pi(210000), EnergyDeltaMJ: pi(210)}
	for _, tc := range []struct {
		name         string
		gpu, job     int64
		fromMs, toMs int64
		want         []SampleRow
	}{
		{"the job's and the shared, not another job's", 1, 100, 0, 8000000, []SampleRow{first, second, last}},
		{"the end is out", 1, 100, 0, 7200000, []SampleRow{first, second}},
		{"from the second", 1, 100, 3601000, 8000000, []SampleRow{second, last}},
		{"another job sees the shared sample only", 1, 999, 3601000, 3602000, []SampleRow{second}},
		{"another GPU", 2, 100, 0, 8000000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []SampleRow
			err := s.JobSamples(context.Background(), tc.gpu, tc.job, tc.fromMs, tc.toMs, func(r *SampleRow) {
				// The row is reused: keep copies of what it points to.
				c := *r
				for _, p := range []**int64{&c.Util, &c.MemUsedMiB, &c.PowerMW, &c.EnergyDeltaMJ} {
					if *p != nil {
						*p = pi(**p)
					}
				}
				if c.Jobs != nil {
					c.Jobs = ps(*c.Jobs)
				}
				got = append(got, c)
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("JobSamples (-want +got):\n%s", diff)
			}
		})
	}
}
