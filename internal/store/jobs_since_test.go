package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJobsSince(t *testing.T) {
	s := readFixture(t)
	all := JobsQuery{From: 0, To: 100000}
	for _, tc := range []struct {
		name      string
		q         JobsQuery
		startFrom int64
		limit     int
		want      []int64 // rows
	}{
		{"no bound, newest first", all, 0, 0, []int64{2, 1}},
		{"bound cuts the older run", all, 3601, 0, []int64{2}},
		{"bound at a start keeps it", all, 3600, 0, []int64{2, 1}},
		{"ignored runs never", JobsQuery{From: 0, To: 100000, Ignored: true}, 0, 0, []int64{2, 1}},
		{"window after the first", JobsQuery{From: 7200, To: 100000}, 0, 0, []int64{2}},
		{"window before any", JobsQuery{From: 0, To: 3600}, 0, 0, nil},
		{"by user", JobsQuery{From: 0, To: 100000, Users: []string{"alice"}}, 0, 0, []int64{1}},
		{"by account and partition", JobsQuery{From: 0, To: 100000, Accounts: []string{"chem"}, Partitions: []string{"long"}}, 0, 0, []int64{2}},
		{"by node", JobsQuery{From: 0, To: 100000, NodeIDs: []int64{2}}, 0, 0, []int64{2}},
		{"by model", JobsQuery{From: 0, To: 100000, Models: []string{"A100"}}, 0, 0, []int64{2, 1}},
		{"by cluster", JobsQuery{From: 0, To: 100000, Clusters: []string{"c2"}}, 0, 0, nil},
		{"most allocated", JobsQuery{From: 0, To: 100000, Sort: JobsByAlloc}, 0, 0, []int64{2, 1}},
		{"least efficient", JobsQuery{From: 0, To: 100000, Sort: JobsByEff}, 0, 0, []int64{2, 1}},
		{"most idle", JobsQuery{From: 0, To: 100000, Sort: JobsByIdle}, 0, 0, []int64{1, 2}},
		{"stopped by fn", all, 0, 1, []int64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []JobRow
			err := s.JobsSince(context.Background(), tc.q, tc.startFrom, func(j *JobRow) bool {
				got = append(got, *j)
				return tc.limit == 0 || len(got) < tc.limit
			})
			if err != nil {
				t.Fatal(err)
			}
			var want []JobRow
			for _, r := range tc.want {
				want = append(want, fixtureJobs[r])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("JobsSince (-want +got):\n%s", diff)
			}
		})
	}
	if err := s.JobsSince(context.Background(), JobsQuery{Sort: "name"}, 0, func(*JobRow) bool { return true }); err == nil {
		t.Error("an unknown order: no error")
	}
}
