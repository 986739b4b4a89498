package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFacts(t *testing.T) {
	s := readFixture(t)
	alice := func(start, node int64, alloc int64, used, idle, sample float64, mj, jobs int64) FactRow {
		return FactRow{Start: start, Cluster: "c1", User: "alice", Account: "physics", Partition: "gpu", NodeID: node, Model: "A100",
			Usage: Usage{AllocS: alloc, UsedS: used, IdleS: idle, SampleS: sample, EnergyMJ: mj, Jobs: jobs}}
	}
	bob := FactRow{Start: 7200, Cluster: "c1", User: "bob", Account: "chem", Partition: "long", Model: "H100", Usage: Usage{AllocS: 3600, Jobs: 1}}
	bobNode := bob
	bobNode.NodeID = 2
	for _, tc := range []struct {
		name string
		q    FactQuery
		want []FactRow
	}{
		{"hourly, nodes summed away", FactQuery{Grain: Hourly, From: 0, To: 3 * 3600},
			[]FactRow{alice(3600, 0, 4000, 2000, 100, 3300, 5050, 1), bob}},
		{"hourly by node", FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true},
			[]FactRow{alice(3600, 1, 3600, 1800, 100, 3000, 5000, 1), alice(3600, 2, 400, 200, 0, 300, 50, 0), bobNode}},
		{"hourly, one node", FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true, NodeIDs: []int64{2}},
			[]FactRow{alice(3600, 2, 400, 200, 0, 300, 50, 0), bobNode}},
		{"hourly, the window's end is out", FactQuery{Grain: Hourly, From: 0, To: 2 * 3600},
			[]FactRow{alice(3600, 0, 4000, 2000, 100, 3300, 5050, 1)}},
		{"hourly, by user and model", FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, Users: []string{"bob", "zed"}, Models: []string{"H100"}},
			[]FactRow{bob}},
		{"hourly, no such account", FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, Accounts: []string{"nobody"}}, nil},
		{"daily", FactQuery{Grain: Daily, From: 0, To: 2 * 86400, Partitions: []string{"gpu"}, Clusters: []string{"c1"}},
			[]FactRow{alice(0, 0, 4000, 2000, 100, 3300, 5050, 1),
				{Start: 86400, Cluster: "c1", User: "dave", Account: "bio", Partition: "gpu", Model: "A100", Usage: Usage{AllocS: 10, UsedS: 1}}}},
		{"monthly, ignored rows left out", FactQuery{Grain: Monthly, From: 0, To: 31 * 86400},
			[]FactRow{alice(0, 0, 4000, 2000, 100, 3300, 5050, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []FactRow
			if err := s.Facts(context.Background(), tc.q, func(r *FactRow) { got = append(got, *r) }); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Facts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDistinctAndJobsHave(t *testing.T) {
	ctx := context.Background()
	s := readFixture(t)
	for _, tc := range []struct {
		col  string
		g    Grain
		want []string
	}{
		{"user", Daily, []string{"alice", "dave"}},
		{"user", Monthly, []string{"alice", "erin"}},
		{"model", Monthly, []string{"A100", "H100"}},
	} {
		t.Run(tc.col, func(t *testing.T) {
			got, err := s.Distinct(ctx, tc.col, tc.g)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Distinct(%s) (-want +got):\n%s", tc.col, diff)
			}
		})
	}
	if _, err := s.Distinct(ctx, "uid; DROP TABLE jobs", Daily); err == nil {
		t.Error("Distinct of a column that is no rollup column: no error")
	}
	for _, tc := range []struct {
		col, v string
		want   bool
	}{
		{"user", "carol", true}, {"user", "mallory", false}, {"account", "chem", true},
		{"partition", "long", true}, {"cluster", "c2", false}, {"model", "H100", true}, {"model", "V100", false},
	} {
		t.Run(tc.col+"="+tc.v, func(t *testing.T) {
			got, err := s.JobsHave(ctx, tc.col, tc.v)
			if err != nil || got != tc.want {
				t.Errorf("JobsHave(%s, %s) = %v, %v; want %v", tc.col, tc.v, got, err, tc.want)
			}
		})
	}
	if _, err := s.JobsHave(ctx, "state", "failed"); err == nil {
		t.Error("JobsHave on a column filters do not use: no error")
	}
}
