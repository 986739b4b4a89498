package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExports(t *testing.T) {
	s := readFixture(t)
	ctx := context.Background()
	gpus, err := s.GPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]GPURow{{ID: 1, NodeID: 1, UUID: "GPU-a", Index: pi(0)}, {ID: 2, NodeID: 2, UUID: "GPU-b"}}, gpus); diff != "" {
		t.Fatalf("GPUs (-want +got):\n%s", diff)
	}
	job1 := []any{"c1", int64(100), int64(0), nil, nil, "alice", "physics", "gpu", "n1", int64(1), int64(3600), int64(7200), "completed",
		int64(0), int64(0), int64(3600), 1800.5, float64(100), int64(5000)}
	job2 := []any{"c1", int64(105), int64(0), int64(101), int64(3), "bob", "chem", "long", "n1,n2", int64(2), int64(7200), nil, "running",
		int64(0), int64(0), int64(7200), float64(0), float64(0), int64(0)}
	for _, tc := range []struct {
		name string
		read func(fn func([]any) error) error
		want [][]any
	}{
		{"jobs by start, the ignored run too", func(fn func([]any) error) error { return s.ExportJobsIn(ctx, nil, 0, 100000, fn) },
			[][]any{job1, job2, {"c1", int64(100), int64(1), nil, nil, "alice", "physics", "gpu", "n1", int64(1), int64(7300), int64(9000), "failed",
				int64(1), int64(1), int64(1700), float64(10), float64(1600), int64(7)}}},
		{"jobs in a window", func(fn func([]any) error) error { return s.ExportJobsIn(ctx, nil, 0, 7200, fn) }, [][]any{job1}},
		{"gpus", func(fn func([]any) error) error { return s.ExportGPUsIn(ctx, nil, 0, 8000, fn) },
			[][]any{
				{"c1", int64(100), int64(0), "n1", "GPU-a", int64(0), "A100", float64(3600), float64(1800), int64(90), int64(1000), int64(81920), int64(5000), float64(10), int64(1)},
				{"c1", int64(105), int64(0), "n2", "GPU-b", nil, "H100", float64(0), float64(0), nil, nil, int64(40960), nil, float64(0), int64(0)},
			}},
		{"samples", func(fn func([]any) error) error { return s.ExportSamples(ctx, "n1", gpus[0], 3600000, 3601000, fn) },
			[][]any{{"n1", "GPU-a", int64(0), int64(3600000), int64(1000), int64(100), int64(0), int64(0), int64(50), int64(10), int64(1000),
				int64(200000), nil, nil, nil, nil, nil}}},
		{"samples of a GPU with no index", func(fn func([]any) error) error { return s.ExportSamples(ctx, "n2", gpus[1], 0, 1<<40, fn) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]any
			err := tc.read(func(vals []any) error {
				got = append(got, append([]any(nil), vals...))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	stop := errors.New("writer full")
	calls := 0
	err = s.ExportJobsIn(ctx, nil, 0, 100000, func([]any) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("an error from fn: %v after %d rows, want it as it is after 1", err, calls)
	}
}

// TestGPUOrderNullIndex: a GPU whose index is unknown sorts before its
// node's indexed ones on both engines (SQLite's NULLs come first in an
// ascending order, PostgreSQL's last unless told).
func TestGPUOrderNullIndex(t *testing.T) {
	ctx := context.Background()
	s := ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name) VALUES (1, 'c1', 'n1')`,
		`INSERT INTO gpus(id, uuid, node_id, idx) VALUES (1, 'GPU-a', 1, 0), (2, 'GPU-z', 1, NULL)`,
		`INSERT INTO jobs(id, cluster, job_id, start) VALUES (1, 'c1', 7, 100)`,
		`INSERT INTO job_gpus(job, gpu_id, node_id) VALUES (1, 1, 1), (1, 2, 1)`,
	)
	gpus, err := s.GPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	jgs, err := s.JobGPUs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	if err := s.ExportGPUsIn(ctx, nil, 0, 1000, func(vals []any) error {
		exported = append(exported, fmt.Sprint(vals[4]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var got [3][]string
	for _, g := range gpus {
		got[0] = append(got[0], g.UUID)
	}
	for _, g := range jgs {
		got[1] = append(got[1], g.UUID)
	}
	got[2] = exported
	want := [3][]string{{"GPU-z", "GPU-a"}, {"GPU-z", "GPU-a"}, {"GPU-z", "GPU-a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUs, JobGPUs, ExportGPUs order (-want +got):\n%s", diff)
	}
}
