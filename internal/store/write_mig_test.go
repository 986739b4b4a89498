package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestSliceRollupModel: on a node with a whole A100 and a MIG slice of
// another, the slice job's use is rolled up under "<parent> MIG
// <profile>" and the whole GPU's under the node's model; ignoring the
// slice job moves its rows, under the same model, and leaves nothing
// behind. Before, both were the node's model: a slice counted as a
// whole GPU of it.
func TestSliceRollupModel(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	const model = "NVIDIA A100-SXM4-80GB"
	whole, slice := 0, 1
	gi, ci := 2, 0
	gpus := map[uint64]record.GPU{
		5: {Minor: 0, Index: &whole, UUID: "GPU-a", Model: model},
		6: {Minor: 1, Index: &slice, UUID: "MIG-b", Model: model, Parent: "GPU-c", Profile: "1g.10gb", GI: &gi, CI: &ci},
	}
	for _, kind := range []record.Kind{record.JobStart, record.JobEnd} {
		batchOf(t, s, t0.Add(2*time.Hour), func(b *Batch) error {
			for _, id := range []uint64{5, 6} {
				at := t0
				if kind == record.JobEnd {
					at = t0.Add(time.Hour)
				}
				e := ev(kind, "n1", at, 1)
				e.Job.ID, e.Key = id, record.EventKey("c", id, 0, "n1", kind)
				e.GPUs = []record.GPU{gpus[id]}
				if err := b.Event(e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	type row struct {
		Model   string
		Ignored bool
		Alloc   int64
	}
	byModel := func() []row {
		t.Helper()
		rows, err := s.db.Query(`SELECT model, ignored, sum(alloc_gpu_s) FROM rollup_hourly GROUP BY model, ignored HAVING sum(alloc_gpu_s) != 0 ORDER BY model, ignored`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.Model, &r.Ignored, &r.Alloc); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	want := []row{{model, false, 3600}, {model + " MIG 1g.10gb", false, 3600}}
	if d := cmp.Diff(want, byModel()); d != "" {
		t.Errorf("rollups by model (-want +got):\n%s", d)
	}
	var job int64
	s.db.QueryRow(`SELECT id FROM jobs WHERE job_id = 6`).Scan(&job)
	batchOf(t, s, t0.Add(2*time.Hour), func(b *Batch) error { return b.SetIgnored(job, true, "test") })
	want[1].Ignored = true
	if d := cmp.Diff(want, byModel()); d != "" {
		t.Errorf("rollups by model, slice job ignored (-want +got):\n%s", d)
	}
}
