package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestFactsKeep: a query that keeps some columns gives the rows of the
// query that keeps them all summed over the others (left empty), for
// every grain, by node or not, summed or not, and from the node rollups.
func TestFactsKeep(t *testing.T) {
	ctx := context.Background()
	s := readFixture(t)
	nodes := ledgerOf(t, `INSERT INTO rollup_node_hour(hour, cluster, partition, node_id, model, ignored, alloc_gpu_s, used_gpu_s, jobs)
 VALUES (0, 'c1', 'gpu', 1, 'A100', 0, 3600, 10.5, 1), (0, 'c1', 'long', 1, 'A100', 0, 600, 1.25, 1), (1, 'c1', 'gpu', 1, 'A100', 0, 3600, 0, 0),
 (1, 'c1', 'gpu', 2, 'H100', 0, 1800, 2, 1), (1, 'c2', 'gpu', 3, 'A100', 0, 7, 0, 0), (1, 'c1', 'gpu', 2, 'A100', 1, 99, 0, 9)`)
	// fold sums rows keeping only keep's columns, the node too if byNode.
	fold := func(rows []FactRow, keep Cols, byNode bool) []FactRow {
		idx := map[FactRow]int{}
		var out []FactRow
		for _, r := range rows {
			k := FactRow{Start: r.Start, Cluster: r.Cluster}
			if keep&ColUser != 0 {
				k.User = r.User
			}
			if keep&ColAccount != 0 {
				k.Account = r.Account
			}
			if keep&ColPartition != 0 {
				k.Partition = r.Partition
			}
			if keep&ColModel != 0 {
				k.Model = r.Model
			}
			if byNode {
				k.NodeID = r.NodeID
			}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, k)
			}
			out[i].Usage.Add(r.Usage)
		}
		return out
	}
	read := func(fn func(context.Context, FactQuery, func(*FactRow)) error, q FactQuery) []FactRow {
		t.Helper()
		var got []FactRow
		if err := fn(ctx, q, func(r *FactRow) { got = append(got, *r) }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	key := func(r FactRow) string {
		return fmt.Sprintf("%012d|%s|%s|%s|%s|%s|%06d", r.Start, r.Cluster, r.User, r.Account, r.Partition, r.Model, r.NodeID)
	}
	sortRows := cmpopts.SortSlices(func(a, b FactRow) bool { return key(a) < key(b) })
	for _, tc := range []struct {
		name  string
		fn    func(context.Context, FactQuery, func(*FactRow)) error
		q     FactQuery
		nodes bool // the node rollups, which may sum the nodes away too
	}{
		{"hourly", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600}, false},
		{"hourly sums", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, HourSums: true}, false},
		{"hourly by node", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true}, false},
		{"hourly, summed", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, Sum: true}, false},
		{"daily", s.Facts, FactQuery{Grain: Daily, From: 0, To: 2 * 86400}, false},
		{"daily, summed", s.Facts, FactQuery{Grain: Daily, From: 0, To: 2 * 86400, Sum: true}, false},
		{"monthly", s.Facts, FactQuery{Grain: Monthly, From: 0, To: 31 * 86400}, false},
		{"node rollups", nodes.NodeFacts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true}, true},
		{"node rollups, summed", nodes.NodeFacts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true, Sum: true}, true},
	} {
		all := read(tc.fn, tc.q)
		if len(all) == 0 {
			t.Fatalf("%s: no rows", tc.name)
		}
		if tc.q.Sum {
			for i := range all {
				all[i].Start = tc.q.From
			}
		}
		for _, keep := range []Cols{ColCluster, ColPartition, ColModel, ColUser | ColAccount, ColPartition | ColModel, AllCols} {
			byNodes := []bool{tc.q.ByNode}
			if tc.nodes {
				byNodes = append(byNodes, false)
			}
			for _, byNode := range byNodes {
				q := tc.q
				q.Keep, q.ByNode = keep, byNode
				t.Run(tc.name, func(t *testing.T) {
					want := fold(all, keep|ColCluster, byNode)
					if diff := cmp.Diff(want, read(tc.fn, q), sortRows); diff != "" {
						t.Errorf("keep %05b, by node %v (-want +got):\n%s", keep, byNode, diff)
					}
				})
			}
		}
	}
}
