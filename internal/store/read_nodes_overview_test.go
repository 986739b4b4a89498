package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNodesOverview(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *Ledger
		want []NodeOverview
		max  int64
	}{
		{"read fixture", readFixture(t), []NodeOverview{
			{ID: 1, Cluster: "c1", Name: "n1", LastSeen: pi(1000), GPUs: 1},
			{ID: 2, Cluster: "c1", Name: "n2", LastSeen: pi(900), GPUs: 1},
		}, 2},
		{"by cluster and name, not id", ledgerOf(t,
			`INSERT INTO nodes(id, cluster, name, last_record, last_ingest) VALUES (1, 'c2', 'a', NULL, NULL), (2, 'c1', 'z', 5, 6), (3, 'c1', 'b', NULL, 7)`,
			`INSERT INTO gpus(id, uuid, node_id, model) VALUES (1, 'GPU-a', 2, 'A100'), (2, 'GPU-b', 2, 'A100')`,
		), []NodeOverview{
			{ID: 3, Cluster: "c1", Name: "b", LastSeen: pi(7)},
			{ID: 2, Cluster: "c1", Name: "z", LastSeen: pi(5), GPUs: 2},
			{ID: 1, Cluster: "c2", Name: "a"},
		}, 3},
		{"empty ledger", emptyStore(t), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			got, err := tc.s.NodesOverview(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NodesOverview (-want +got):\n%s", diff)
			}
			max, err := tc.s.MaxNodeID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if max != tc.max {
				t.Errorf("MaxNodeID = %d, want %d", max, tc.max)
			}
		})
	}
}
