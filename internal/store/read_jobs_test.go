package store

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ps(v string) *string { return &v }

// fixtureJobs are readFixture's job runs as Jobs reads them.
var fixtureJobs = map[int64]JobRow{
	1: {Row: 1, Cluster: "c1", JobID: 100, User: "alice", Account: "physics", Partition: "gpu", Nodes: "n1", GPUs: 1, Start: 3600, End: pi(7200),
		State: "completed", Usage: Usage{AllocS: 3600, UsedS: 1800.5, IdleS: 100, EnergyMJ: 5000, SampleS: 3500, Jobs: 1}},
	2: {Row: 2, Cluster: "c1", JobID: 105, ArrayJobID: pi(101), ArrayTaskID: pi(3), User: "bob", Account: "chem", Partition: "long", Nodes: "n1,n2",
		GPUs: 2, Start: 7200, State: "running", Usage: Usage{AllocS: 7200}},
	3: {Row: 3, Cluster: "c1", JobID: 100, Restart: 1, User: "alice", Account: "physics", Partition: "gpu", Nodes: "n1", GPUs: 1, Start: 7300, End: pi(9000),
		State: "failed", EndEstimated: true, Ignored: true, IgnoreReason: ps("test run"), Usage: Usage{AllocS: 1700, UsedS: 10, IdleS: 1600, EnergyMJ: 7}},
}

func TestJobs(t *testing.T) {
	s := readFixture(t)
	for _, tc := range []struct {
		name  string
		q     JobsQuery
		limit int
		want  []int64 // rows
	}{
		{"all counted, newest first", JobsQuery{From: 0, To: 100000}, 0, []int64{2, 1}},
		{"ignored", JobsQuery{From: 0, To: 100000, Ignored: true}, 0, []int64{3}},
		{"window after the first", JobsQuery{From: 7200, To: 100000}, 0, []int64{2}},
		{"window before any", JobsQuery{From: 0, To: 3600}, 0, nil},
		{"by user", JobsQuery{From: 0, To: 100000, Users: []string{"alice"}}, 0, []int64{1}},
		{"by account and partition", JobsQuery{From: 0, To: 100000, Accounts: []string{"chem"}, Partitions: []string{"long"}}, 0, []int64{2}},
		{"by node", JobsQuery{From: 0, To: 100000, NodeIDs: []int64{2}}, 0, []int64{2}},
		{"by model", JobsQuery{From: 0, To: 100000, Models: []string{"A100"}}, 0, []int64{2, 1}},
		{"by cluster", JobsQuery{From: 0, To: 100000, Clusters: []string{"c2"}}, 0, nil},
		{"most allocated", JobsQuery{From: 0, To: 100000, Sort: JobsByAlloc}, 0, []int64{2, 1}},
		{"least efficient", JobsQuery{From: 0, To: 100000, Sort: JobsByEff}, 0, []int64{2, 1}},
		{"most idle", JobsQuery{From: 0, To: 100000, Sort: JobsByIdle}, 0, []int64{1, 2}},
		{"stopped by fn", JobsQuery{From: 0, To: 100000}, 1, []int64{2}},
		{"start bound cuts the older run", JobsQuery{From: 0, To: 100000, StartFrom: 3601}, 0, []int64{2}},
		{"start bound at a start keeps it", JobsQuery{From: 0, To: 100000, StartFrom: 3600}, 0, []int64{2, 1}},
		{"start bound below every run", JobsQuery{From: 0, To: 100000, StartFrom: -5}, 0, []int64{2, 1}},
		{"start bound on ignored runs", JobsQuery{From: 0, To: 100000, Ignored: true, StartFrom: 7301}, 0, nil},
		{"start bound with a filter and an order", JobsQuery{From: 0, To: 100000, StartFrom: 7000, Models: []string{"A100"}, Sort: JobsByIdle}, 0, []int64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []JobRow
			err := s.Jobs(context.Background(), tc.q, func(j *JobRow) bool {
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
				t.Errorf("Jobs (-want +got):\n%s", diff)
			}
		})
	}
	if err := s.Jobs(context.Background(), JobsQuery{Sort: "name"}, func(*JobRow) bool { return true }); err == nil {
		t.Error("an unknown order: no error")
	}
}

func TestRun(t *testing.T) {
	s := readFixture(t)
	noStart := JobRow{Row: 4, Cluster: "c1", JobID: 102, User: "carol", Start: 5000, End: pi(5000), State: "completed"}
	for _, tc := range []struct {
		name string
		q    RunQuery
		want JobRow
		err  error
	}{
		{"latest run", RunQuery{JobID: 100, Restart: -1, Clusters: []string{"c1"}}, fixtureJobs[3], nil},
		{"first run", RunQuery{JobID: 100, Restart: 0, Clusters: []string{"c1"}}, fixtureJobs[1], nil},
		{"no cluster named", RunQuery{JobID: 100, Restart: 0}, fixtureJobs[1], nil},
		{"array task", RunQuery{JobID: 101, Task: pi(3), Restart: -1, Cluster: "c1"}, fixtureJobs[2], nil},
		{"array task, other cluster", RunQuery{JobID: 101, Task: pi(3), Restart: -1, Cluster: "c2"}, JobRow{}, ErrNotFound},
		{"no start: its end stands in", RunQuery{JobID: 102, Restart: -1}, noStart, nil},
		{"other cluster", RunQuery{JobID: 100, Restart: -1, Clusters: []string{"c2"}}, JobRow{}, ErrNotFound},
		{"no such run", RunQuery{JobID: 100, Restart: 5}, JobRow{}, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Run(context.Background(), tc.q)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			want := tc.want
			want.SampleS, want.Jobs = 0, 0
			if want.Row == 1 {
				want.SampleS, want.Jobs = 3500, 1
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobParts(t *testing.T) {
	ctx := context.Background()
	s := readFixture(t)
	for _, tc := range []struct {
		name  string
		row   int64
		nodes []JobNodeRow
		gpus  []JobGPURow
	}{
		{"ended, with an aggregate", 1,
			[]JobNodeRow{{NodeID: 1, GPUs: 1, Model: "A100", Start: pi(3600), End: pi(7200), EndSource: "epilog", ExitCode: pi(0)}},
			[]JobGPURow{{GPUID: 1, NodeID: 1, Index: pi(0), Minor: pi(0), UUID: "GPU-a", Model: "A100", AggSeq: pi(1), AggFinal: true,
				SampleS: 3600, UtilS: 1800, UtilMax: pf(90), MemMaxMiB: pf(1000), MemTotalMiB: pf(81920), EnergyMJ: pi(5000),
				EnergyStartMJ: pi(100), EnergyEndMJ: pi(5100), IdleS: 10, Quality: `{"util":2}`}}},
		{"running, no aggregate", 2,
			[]JobNodeRow{{NodeID: 1, GPUs: 1, Model: "A100", Start: pi(7200)}, {NodeID: 2, GPUs: 1, Model: "H100", Start: pi(7200), Quality: "no_prolog"}},
			[]JobGPURow{{GPUID: 2, NodeID: 2, UUID: "GPU-b", Model: "H100", MemTotalMiB: pf(40960)}}},
		{"no parts", 4, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := s.JobNodes(ctx, tc.row)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.nodes, nodes); diff != "" {
				t.Errorf("JobNodes (-want +got):\n%s", diff)
			}
			gpus, err := s.JobGPUs(ctx, tc.row)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.gpus, gpus); diff != "" {
				t.Errorf("JobGPUs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunTieBreak: among runs of one job id in several clusters, Run
// picks a run with a start over one without, and the newest row among
// equals, the same on both engines.
func TestRunTieBreak(t *testing.T) {
	s := ledgerOf(t,
		`INSERT INTO jobs(id, cluster, job_id, restart, start, end, state) VALUES
		 (1, 'c1', 50, 0, NULL, 900, 'completed'), (2, 'c2', 50, 0, 100, NULL, 'running'), (3, 'c3', 50, 0, 100, NULL, 'running')`,
	)
	for _, tc := range []struct {
		clusters []string
		want     int64
	}{
		{[]string{"c1", "c2"}, 2},
		{[]string{"c1", "c2", "c3"}, 3},
		{[]string{"c1"}, 1},
	} {
		got, err := s.Run(context.Background(), RunQuery{JobID: 50, Restart: -1, Clusters: tc.clusters})
		if err != nil {
			t.Fatal(err)
		}
		if got.Row != tc.want {
			t.Errorf("Run of job 50 in %v: row %d, want %d", tc.clusters, got.Row, tc.want)
		}
	}
}
