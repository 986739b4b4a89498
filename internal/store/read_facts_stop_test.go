package store

import (
	"context"
	"errors"
	"testing"
)

// TestFactsStopOnCancel: a reader whose callback cancels its context
// hands over no further row and returns the cancel's cause, on every
// engine (a driver may hold rows it has already read).
func TestFactsStopOnCancel(t *testing.T) {
	s := readFixture(t)
	nodes := ledgerOf(t, `INSERT INTO rollup_node_hour(hour, cluster, partition, node_id, model, ignored, alloc_gpu_s, jobs)
 VALUES (0, 'c1', 'gpu', 1, 'A100', 0, 3600, 1), (1, 'c1', 'gpu', 1, 'A100', 0, 3600, 0), (1, 'c1', 'gpu', 2, 'A100', 0, 1800, 1)`)
	halt := errors.New("refused")
	for _, tc := range []struct {
		name string
		read func(context.Context, FactQuery, func(*FactRow)) error
		q    FactQuery
	}{
		{"hourly by node", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true}},
		{"hourly, nodes summed away", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600}},
		{"hourly, summed", s.Facts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, Sum: true}},
		{"node rollups", nodes.NodeFacts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true}},
		{"node rollups, summed", nodes.NodeFacts, FactQuery{Grain: Hourly, From: 0, To: 3 * 3600, ByNode: true, Sum: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := 0
			if err := tc.read(context.Background(), tc.q, func(*FactRow) { all++ }); err != nil {
				t.Fatal(err)
			}
			if all < 2 {
				t.Fatalf("%d rows: the test needs two at least", all)
			}
			ctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			n := 0
			err := tc.read(ctx, tc.q, func(*FactRow) {
				n++
				stop(halt)
			})
			if n != 1 || !errors.Is(err, halt) {
				t.Errorf("%d rows of %d handed over, error %v; want 1 and %v", n, all, err, halt)
			}
		})
	}
}
