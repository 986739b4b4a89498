package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestIdsDoNotDependOnBatching: a node, GPU or job run seen again in
// later batches keeps its id and uses up none, so the next new one gets
// the next id, however the records were batched (PostgreSQL's INSERT
// uses up a sequence number even when it meets the conflict).
func TestIdsDoNotDependOnBatching(t *testing.T) {
	s := openTemp(t)
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	idx, minor := 0, 0
	ids := func(node, uuid string, job uint64) []int64 {
		var out []int64
		batchOf(t, s, now, func(b *Batch) error {
			n, err := b.Node("c", node)
			if err != nil {
				return err
			}
			g, err := b.GPU(uuid, n, &idx, &minor, "A100")
			if err != nil {
				return err
			}
			j, err := b.Job("c", job, 0)
			out = []int64{n, g, j}
			return err
		})
		return out
	}
	for range 3 {
		if diff := cmp.Diff([]int64{1, 1, 1}, ids("n1", "GPU-1", 5)); diff != "" {
			t.Fatalf("ids of the known ones (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff([]int64{2, 2, 2}, ids("n2", "GPU-2", 6)); diff != "" {
		t.Errorf("ids of new ones after three batches (-want +got):\n%s", diff)
	}
	// A GPU whose model becomes known is updated in place.
	batchOf(t, s, now, func(b *Batch) error {
		_, err := b.GPU("GPU-1", 1, &idx, &minor, "H100")
		return err
	})
	if diff := cmp.Diff([]string{"1|GPU-1|H100", "2|GPU-2|A100"}, dump(t, s.db, `SELECT id, uuid, model FROM gpus ORDER BY id`)); diff != "" {
		t.Errorf("gpus (-want +got):\n%s", diff)
	}
}
