package store

import (
	"context"
	"fmt"
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

// TestSharedJobIDs: a batch sharing a pass's JobIDs finds the job runs
// the committed batches before it made, with their ids; a rolled-back
// batch's runs are not shared (their rows are gone), so the next batch
// makes the run again and the ledger holds it under the id handed out.
func TestSharedJobIDs(t *testing.T) {
	s := openTemp(t)
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	ids := NewJobIDs()
	job := func(b *Batch, id uint64) int64 {
		t.Helper()
		j, err := b.Job("c", id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	var first, gone int64
	batchOf(t, s, now, func(b *Batch) error { b.ShareJobIDs(ids); first = job(b, 5); return nil })
	if got, ok := ids.get(jobKey{"c", 5, 0}); !ok || got != first {
		t.Errorf("shared id of job 5 after its batch committed: %d, %v; want %d", got, ok, first)
	}
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	b.ShareJobIDs(ids)
	gone = job(b, 6)
	b.Rollback()
	if _, ok := ids.get(jobKey{"c", 6, 0}); ok {
		t.Errorf("job 6 (id %d), made by a batch rolled back, is shared", gone)
	}
	var again, six int64
	batchOf(t, s, now, func(b *Batch) error {
		b.ShareJobIDs(ids)
		again, six = job(b, 5), job(b, 6)
		return nil
	})
	if again != first {
		t.Errorf("job 5 in a later batch: id %d, want %d", again, first)
	}
	want := []string{fmt.Sprintf("%d|5", first), fmt.Sprintf("%d|6", six)}
	if diff := cmp.Diff(want, dump(t, s.db, `SELECT id, job_id FROM jobs ORDER BY job_id`)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}
