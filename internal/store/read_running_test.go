package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runningLedger: two running runs of c1 (the newer one ignored), one
// ended, one seen by neither start nor end, and c2's run, newer than all; GPU 1's newest sample is from the run,
// GPU 2's from before it, GPU 3 has none.
func runningLedger(t *testing.T) *Ledger {
	return ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name) VALUES (1, 'c1', 'n1'), (2, 'c1', 'n2')`,
		`INSERT INTO gpus(id, uuid, node_id, idx, model) VALUES (1, 'GPU-a', 1, 0, 'A100'), (2, 'GPU-b', 2, 1, 'H100'), (3, 'GPU-c', 2, NULL, 'H100')`,
		`INSERT INTO jobs(id, cluster, job_id, user, account, partition, nodes, gpus, start, end, state, ignored, ignore_reason, alloc_gpu_s) VALUES
		 (1, 'c1', 10, 'alice', 'physics', 'gpu', 'n1,n2', 3, 7200, NULL, 'running', 0, NULL, 100),
		 (2, 'c1', 11, 'bob', 'chem', 'gpu', 'n2', 0, 8000, NULL, 'running', 1, 'test', 0),
		 (3, 'c1', 12, 'carol', 'bio', 'gpu', 'n1', 1, 100, 200, 'completed', 0, NULL, 100),
		 (4, 'c1', 13, 'dave', 'bio', 'gpu', 'n1', 1, NULL, NULL, 'pending', 0, NULL, 0),
		 (5, 'c2', 10, 'erin', 'bio', 'gpu', 'n1', 0, 9000, NULL, 'running', 0, NULL, 0)`,
		`INSERT INTO job_gpus(job, gpu_id, node_id) VALUES (1, 2, 2), (1, 1, 1), (1, 3, 2), (3, 1, 1)`,
		`INSERT INTO job_hours(job, node_id, hour, alloc_gpu_s, sample_s, jobs) VALUES (1, 1, 2, 100, 60, 1)`,
		`INSERT INTO samples(gpu_id, t_ms, interval_ms, util) VALUES (1, 7100000, 1000, 10), (1, 7300000, 1000, 55), (2, 7000000, 1000, 99)`,
	)
}

func TestRunningJobs(t *testing.T) {
	s := runningLedger(t)
	newest := JobRow{Row: 2, Cluster: "c1", JobID: 11, User: "bob", Account: "chem", Partition: "gpu", Nodes: "n2", Start: 8000, State: "running",
		Ignored: true, IgnoreReason: ps("test")}
	older := JobRow{Row: 1, Cluster: "c1", JobID: 10, User: "alice", Account: "physics", Partition: "gpu", Nodes: "n1,n2", GPUs: 3, Start: 7200,
		State: "running", Usage: Usage{AllocS: 100, SampleS: 60, Jobs: 1}}
	other := JobRow{Row: 5, Cluster: "c2", JobID: 10, User: "erin", Account: "bio", Partition: "gpu", Nodes: "n1", Start: 9000, State: "running"}
	for _, tc := range []struct {
		name string
		s    *Ledger
		q    RunningQuery
		want []JobRow
	}{
		{"newest first, ignored included", s, RunningQuery{Limit: 10}, []JobRow{other, newest, older}},
		{"limit", s, RunningQuery{Limit: 1}, []JobRow{other}},
		// c2's run is the newest: the cluster is chosen before the limit.
		{"one cluster, limit", s, RunningQuery{Clusters: []string{"c1"}, Limit: 1}, []JobRow{newest}},
		{"one cluster", s, RunningQuery{Clusters: []string{"c2"}, Limit: 10}, []JobRow{other}},
		{"both clusters", s, RunningQuery{Clusters: []string{"c1", "c2"}, Limit: 10}, []JobRow{other, newest, older}},
		{"empty ledger", emptyStore(t), RunningQuery{Limit: 10}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.RunningJobs(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RunningJobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNowGPUs(t *testing.T) {
	s := runningLedger(t)
	for _, tc := range []struct {
		name string
		rows []int64
		want map[string]NowGPURow // by uuid: the order is the caller's
	}{
		{"a running job's GPUs", []int64{1}, map[string]NowGPURow{
			"GPU-a": {Row: 1, Node: "n1", Index: pi(0), UUID: "GPU-a", Model: "A100", Util: pf(55), AtMs: pi(7300000)},
			"GPU-b": {Row: 1, Node: "n2", Index: pi(1), UUID: "GPU-b", Model: "H100"},
			"GPU-c": {Row: 1, Node: "n2", UUID: "GPU-c", Model: "H100"},
		}},
		{"a job without GPUs", []int64{2}, map[string]NowGPURow{}},
		{"none asked", nil, map[string]NowGPURow{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.NowGPUs(context.Background(), tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			byUUID := map[string]NowGPURow{}
			for _, g := range got {
				byUUID[g.UUID] = g
			}
			if len(byUUID) != len(got) {
				t.Errorf("a GPU listed twice: %+v", got)
			}
			if diff := cmp.Diff(tc.want, byUUID); diff != "" {
				t.Errorf("NowGPUs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobSpan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       *Ledger
		longest int64
		open    *int64
	}{
		{"running and ended runs", runningLedger(t), 100, pi(7200)},
		{"read fixture", readFixture(t), 3600, pi(7200)},
		{"empty ledger", emptyStore(t), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			longest, err := tc.s.LongestEndedJob(ctx)
			if err != nil {
				t.Fatal(err)
			}
			open, err := tc.s.OldestOpenStart(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if longest != tc.longest {
				t.Errorf("LongestEndedJob = %d, want %d", longest, tc.longest)
			}
			if diff := cmp.Diff(tc.open, open); diff != "" {
				t.Errorf("OldestOpenStart (-want +got):\n%s", diff)
			}
		})
	}
}
