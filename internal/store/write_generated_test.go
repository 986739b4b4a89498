package store

import (
	"testing"
	"time"
)

// TestAddRollupHours: a generated ledger's rollups agree with each other
// as the writer's do (checkInvariants), across a month's end, with one
// hour given twice summed into one row, and the node month holds all.
func TestAddRollupHours(t *testing.T) {
	s := openTemp(t)
	end := time.Date(2026, 2, 1, 2, 0, 0, 0, time.UTC)
	var want int64
	batchOf(t, s, end, func(b *Batch) error {
		var hs []RollupHour
		for i, node := range []string{"gpu001", "gpu002"} {
			id, err := b.Node("c1", node)
			if err != nil {
				return err
			}
			for h := end.Add(-4*time.Hour).Unix() / 3600; h < end.Unix()/3600; h++ {
				for _, user := range []string{"alice", "bob", "alice"} {
					u := Usage{AllocS: int64(600 * (i + 1)), UsedS: 300, SampleS: 600, Jobs: 1, Billing: 1.5}
					hs = append(hs, RollupHour{Dims: Dims{Cluster: "c1", User: user, Account: "a", Partition: "p"}, Node: id, Model: "h100", Hour: h, Usage: u})
					want += u.AllocS
				}
			}
		}
		return b.AddRollupHours(hs)
	})
	checkInvariants(t, s, "after AddRollupHours")
	var rows, months int
	var got int64
	if err := s.db.QueryRow(`SELECT count(*) FROM rollup_hourly`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2*4*2 {
		t.Errorf("rollup_hourly has %d rows, want %d: one a (node, hour, user)", rows, 2*4*2)
	}
	if err := s.db.QueryRow(`SELECT count(*), sum(alloc_gpu_s) FROM rollup_node_month`).Scan(&months, &got); err != nil {
		t.Fatal(err)
	}
	if months != 2*2 || got != want {
		t.Errorf("rollup_node_month: %d rows, %d GPU-seconds; want %d, %d", months, got, 2*2, want)
	}
}
