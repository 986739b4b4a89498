package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestNodeRollupsBackfill: the node rollups' migration makes, from a
// ledger's rollup_hourly alone, the rows the writer keeps from then on;
// a job ignored after it moves them as it moves rollup_hourly's.
func TestNodeRollupsBackfill(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	jobs, nowMS := invScenario(r)
	now := time.UnixMilli(nowMS).UTC()
	s := openTemp(t)
	batchOf(t, s, now, func(b *Batch) error {
		for i, j := range jobs {
			if err := b.Event(j.event(record.JobStart, j.start)); err != nil {
				return err
			}
			if len(j.samples) > 0 {
				if _, err := b.Segment(j.segment(uint64(i + 1))); err != nil {
					return err
				}
			}
			if j.end > 0 {
				if err := b.Event(j.event(record.JobEnd, j.end)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM rollup_node_month`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("the writer kept %d node months (%v): the test compares nothing", n, err)
	}
	m := mustMigrations(s.Engine)[NodeRollupsSchema-1]
	for _, tbl := range []string{"rollup_node_hour", "rollup_node_day", "rollup_node_month"} {
		if _, err := s.db.Exec(`DROP TABLE ` + tbl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(m.sql); err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	checkInvariants(t, s, "after "+m.name)
	var job int64
	if err := s.db.QueryRow(`SELECT min(id) FROM jobs WHERE alloc_gpu_s > 0`).Scan(&job); err != nil {
		t.Fatal(err)
	}
	batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, true, "test") })
	checkInvariants(t, s, "after ignoring a job")
}
