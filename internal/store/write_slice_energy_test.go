package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestSliceJobEnergy: MIG instances carry no energy counter, only their
// share of their parent's; a slice job's energy is the parent's delta over
// the same samples times that share. Two slices (3/7 and 4/7) of one A100
// sum to the parent's energy over their time, the node's energy holds the
// parent's once (the instances' rows store no delta of their own), and a
// whole GPU's job counts its own counter as before. Before, slice jobs
// had 0.
func TestSliceJobEnergy(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	const model = "NVIDIA A100-SXM4-80GB"
	const parent, wholeUUID = "GPU-p", "GPU-a"
	whole, sliced := 0, 1
	ci := 0
	gis := []int{1, 2}
	slices := []struct {
		uuid    string
		job     uint64
		profile string
		share   float64
	}{{"MIG-1", 6, "3g.40gb", 3.0 / 7}, {"MIG-2", 7, "4g.40gb", 4.0 / 7}}
	gpus := map[uint64]record.GPU{5: {Minor: 0, Index: &whole, UUID: wholeUUID, Model: model}}
	for i, sl := range slices {
		gpus[sl.job] = record.GPU{Minor: 1, Index: &sliced, UUID: sl.uuid, Model: model, Parent: parent, Profile: sl.profile, GI: &gis[i], CI: &ci}
	}
	const steps = 6 // samples every 10 s; the job runs [t0, t0+60 s)
	const wholeMW, parentMW = 120_000, 210_000
	counter := func(base, mw uint64, k int) *uint64 {
		v := base + mw*10*uint64(k)
		return &v
	}
	var samples []record.Sample
	for k := 0; k <= steps; k++ {
		at := t0.Add(time.Duration(k) * 10 * time.Second)
		// a cycle's samples: the whole GPUs, the parent before its instances
		samples = append(samples,
			record.Sample{Time: at, UUID: wholeUUID, Index: whole, Jobs: []record.JobShare{{Job: 5, Share: 1}}, EnergyMJ: counter(1_000_000, wholeMW, k)},
			record.Sample{Time: at, UUID: parent, Index: sliced, EnergyMJ: counter(5_000_000, parentMW, k)})
		for _, sl := range slices {
			samples = append(samples, record.Sample{Time: at, UUID: sl.uuid, Index: sliced, Jobs: []record.JobShare{{Job: sl.job, Share: 1}},
				SampleMIG: &record.SampleMIG{Parent: parent, ParentShare: sl.share}})
		}
	}
	batchOf(t, s, t0.Add(2*time.Hour), func(b *Batch) error {
		for _, id := range []uint64{5, 6, 7} {
			e := ev(record.JobStart, "n1", t0, 1)
			e.Job.ID, e.Key = id, record.EventKey("c", id, 0, "n1", record.JobStart)
			e.GPUs = []record.GPU{gpus[id]}
			if err := b.Event(e); err != nil {
				return err
			}
		}
		for _, id := range []uint64{5, 6, 7} {
			e := ev(record.JobEnd, "n1", t0.Add(steps*10*time.Second), 1)
			e.Job.ID, e.Key = id, record.EventKey("c", id, 0, "n1", record.JobEnd)
			e.GPUs = []record.GPU{gpus[id]}
			if err := b.Event(e); err != nil {
				return err
			}
		}
		// The allocations are closed before the samples come: a slice's
		// stored sample keeps the energy it was first counted with when
		// its job's allocation moves later (no share is stored to recount).
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}, samples)
		return err
	})
	// Samples 1 to 5 have a delta and lie in the allocation; sample 6
	// starts at its end.
	const counted = steps - 1
	parentMJ := int64(counted * parentMW * 10)
	wantJobs := []string{
		"5|" + itoa(counted*wholeMW*10),
		"6|" + itoa(parentMJ*3/7),
		"7|" + itoa(parentMJ*4/7),
	}
	if d := cmp.Diff(wantJobs, dump(t, s.db, `SELECT job_id, energy_mj FROM jobs ORDER BY job_id`)); d != "" {
		t.Errorf("jobs' energy (-want +got):\n%s", d)
	}
	// The node's energy: the whole GPU's job and the parent's energy over
	// the slices' time, once.
	wantNode := []string{itoa(counted*wholeMW*10 + parentMJ)}
	if d := cmp.Diff(wantNode, dump(t, s.db, `SELECT sum(energy_mj) FROM rollup_hourly`)); d != "" {
		t.Errorf("the node's energy in the rollups (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantNode, dump(t, s.db, `SELECT sum(energy_mj) FROM rollup_node_day`)); d != "" {
		t.Errorf("the node's energy in its day rollup (-want +got):\n%s", d)
	}
	// The instances' rows store no delta: the samples hold the parent's
	// energy once.
	wantDeltas := []string{
		wholeUUID + "|" + itoa(steps*wholeMW*10),
		parent + "|" + itoa(steps*parentMW*10),
		"MIG-1|NULL", "MIG-2|NULL",
	}
	if d := cmp.Diff(wantDeltas, storedDeltas(t, s)); d != "" {
		t.Errorf("stored energy deltas by GPU (-want +got):\n%s", d)
	}
	checkInvariants(t, s, "after slice jobs")
}

// storedDeltas sums each GPU's stored energy_delta_mj by UUID ("NULL"
// where no sample stored one), in UUID order.
func storedDeltas(t *testing.T, s *Ledger) []string {
	t.Helper()
	col := map[string]int{}
	for i, c := range SampleColumns() {
		col[c] = i
	}
	uuids := map[int64]string{}
	for _, row := range dump(t, s.db, `SELECT id || '|' || uuid FROM gpus`) {
		id, uuid, _ := strings.Cut(row, "|")
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		uuids[n] = uuid
	}
	sums := map[string]*int64{}
	err := s.StoredSamples(context.Background(), func(vals []any) error {
		uuid := uuids[vals[col["gpu_id"]].(int64)]
		if _, ok := sums[uuid]; !ok {
			sums[uuid] = nil
		}
		if d, ok := vals[col["energy_delta_mj"]].(int64); ok {
			if sums[uuid] == nil {
				sums[uuid] = new(int64)
			}
			*sums[uuid] += d
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for uuid, sum := range sums {
		v := "NULL"
		if sum != nil {
			v = itoa(*sum)
		}
		out = append(out, uuid+"|"+v)
	}
	slices.Sort(out)
	return out
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
