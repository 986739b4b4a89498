package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestForeignGPUs: only samples inside the window count, whichever pack
// holds them; a GPU without a foreign process is not listed; most
// samples first, then by cluster, node and index; at most limit.
func TestForeignGPUs(t *testing.T) {
	s := ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name) VALUES (1, 'c1', 'n1'), (2, 'c2', 'n2')`,
		`INSERT INTO gpus(id, uuid, node_id, idx) VALUES (1, 'GPU-a', 1, 0), (2, 'GPU-b', 1, 1), (3, 'GPU-c', 2, NULL), (4, 'GPU-d', 1, 2)`,
		`INSERT INTO samples(gpu_id, t_ms, interval_ms, foreign_procs) VALUES
		 (1, 599000, 10000, 1), (1, 610000, 10000, 1), (1, 620000, 10000, 0), (1, 950000, 10000, 2), (1, 1200000, 10000, 1),
		 (2, 700000, 10000, 1), (2, 710000, 10000, 1),
		 (3, 800000, 10000, 1), (3, 810000, 10000, 1), (3, 820000, 10000, 1),
		 (4, 700000, 10000, 0)`,
	)
	a := ForeignGPU{Cluster: "c1", Node: "n1", Index: pi(0), Samples: 2, First: 610000, Last: 950000}
	b := ForeignGPU{Cluster: "c1", Node: "n1", Index: pi(1), Samples: 2, First: 700000, Last: 710000}
	c := ForeignGPU{Cluster: "c2", Node: "n2", Samples: 3, First: 800000, Last: 820000}
	for _, tc := range []struct {
		name  string
		limit int
		want  []ForeignGPU
	}{
		{"all", 0, []ForeignGPU{c, a, b}},
		{"limit", 2, []ForeignGPU{c, a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ForeignGPUs(context.Background(), 600000, 1200000, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ForeignGPUs (-want +got):\n%s", diff)
			}
		})
	}
}
