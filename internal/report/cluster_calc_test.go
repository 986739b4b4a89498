package report

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// TestHourUtil: known answers for one hour of a two-node cluster of 4 +
// 4 GPUs, worked out by hand from sreport's rules (docs/utilization.md).
func TestHourUtil(t *testing.T) {
	const h = int64(1767225600) // 2026-01-01 00:00 UTC
	reg := store.SlurmEvent{Cluster: "c1", Start: h - 86400, GPUs: 8}
	node := func(n string, start, end int64, state uint32) store.SlurmEvent {
		return store.SlurmEvent{Cluster: "c1", Node: n, Start: start, End: end, State: state, GPUs: 4}
	}
	res := func(nodes string, start, end int64, flags string, gpus int64, spans ...store.JobPart) resv {
		r := newResv(store.SlurmReservation{Cluster: "c1", ID: 1, Start: start, End: end, Flags: flags, Nodes: nodes, GPUs: gpus}, []string{nodes})
		r.spans = spans
		return r
	}
	alloc := func(perNode map[string]int64) map[int64]int64 {
		var sum int64
		for _, v := range perNode {
			sum += v
		}
		return map[int64]int64{h: sum}
	}
	for _, c := range []struct {
		name string
		f    clusterFacts
		want Utilization
	}{
		{"idle cluster", clusterFacts{events: []store.SlurmEvent{reg}},
			Utilization{Idle: 28800, Reported: 28800}},
		{"not registered: nothing counted", clusterFacts{events: []store.SlurmEvent{node("n1", h, 0, 1)}, alloc: alloc(map[string]int64{"n1": 3600})},
			Utilization{}},
		{"a job of 4 GPUs for half the hour", clusterFacts{events: []store.SlurmEvent{reg}, alloc: alloc(map[string]int64{"n1": 7200})},
			Utilization{Allocated: 7200, Idle: 21600, Reported: 28800}},
		{"a node drained for the second half", clusterFacts{events: []store.SlurmEvent{reg, node("n2", h+1800, 0, 0x201)}, alloc: alloc(map[string]int64{"n1": 7200})},
			Utilization{Allocated: 7200, Down: 7200, Idle: 14400, Reported: 28800}},
		{"an outage that ended before the hour", clusterFacts{events: []store.SlurmEvent{reg, node("n2", h-7200, h, 1)}},
			Utilization{Idle: 28800, Reported: 28800}},
		{"a node powered down: planned down", clusterFacts{events: []store.SlurmEvent{reg, node("n2", h, 0, 0x1002)}},
			Utilization{PlannedDown: 14400, Idle: 14400, Reported: 28800}},
		{"a FUTURE node: planned down", clusterFacts{events: []store.SlurmEvent{reg, node("n2", h, 0, 6)}},
			Utilization{PlannedDown: 14400, Idle: 14400, Reported: 28800}},
		{"an outage flagged MAINT is the reservation's", clusterFacts{events: []store.SlurmEvent{reg, node("n2", h, 0, 0x8001)}},
			Utilization{Idle: 28800, Reported: 28800}},
		{"a reservation counts as allocated in full, its jobs once", clusterFacts{events: []store.SlurmEvent{reg},
			resvs: []resv{res("n1", h+600, h+2400, "", 4, store.JobPart{Node: "n1", Start: h + 1200, End: h + 2400, GPUs: 2})},
			alloc: alloc(map[string]int64{"n1": 2400, "n2": 14400})},
			Utilization{Allocated: 14400 + 7200, Idle: 7200, Reported: 28800, Reserved: 7200 - 2400}},
		{"an IGNORE_JOBS reservation counts its jobs only", clusterFacts{events: []store.SlurmEvent{reg},
			resvs: []resv{res("n1", h, h+3600, "IGNORE_JOBS", 4, store.JobPart{Node: "n1", Start: h, End: h + 1800, GPUs: 4})},
			alloc: alloc(map[string]int64{"n1": 7200})},
			Utilization{Allocated: 7200, Idle: 21600, Reported: 28800}},
		{"a maintenance reservation is planned down", clusterFacts{events: []store.SlurmEvent{reg},
			resvs: []resv{res("n2", h, h+3600, "MAINT,SPEC_NODES", 4)}},
			Utilization{PlannedDown: 14400, Idle: 14400, Reported: 28800}},
		{"an outage inside a reservation is taken from it", clusterFacts{events: []store.SlurmEvent{reg, node("n1", h, h+1800, 1)},
			resvs: []resv{res("n1", h, h+3600, "", 4)}},
			Utilization{Allocated: 7200, Down: 7200, Idle: 14400, Reported: 28800, Reserved: 7200}},
		// slurmdbd's rule (as_mysql_rollup.c, _setup_cluster_usage): the
		// last reservation on the node takes its overlap off the outage
		// even when negative, so 600 s down count as 600 + 1200.
		{"an outage before a reservation on its node in the hour", clusterFacts{events: []store.SlurmEvent{reg, node("n1", h, h+600, 1)},
			resvs: []resv{res("n1", h+1800, h+3600, "", 4)}},
			Utilization{Allocated: 7200, Down: 7200, Idle: 14400, Reported: 28800, Reserved: 7200}},
		{"the cluster grows mid-hour", clusterFacts{events: []store.SlurmEvent{{Cluster: "c1", Start: h - 86400, End: h + 1800, GPUs: 8},
			{Cluster: "c1", Start: h + 1800, GPUs: 12}}, alloc: alloc(map[string]int64{"n3": 4 * 1800})},
			Utilization{Allocated: 7200, Idle: 36000 - 7200, Reported: 36000}},
		{"more allocated than capacity is capped", clusterFacts{events: []store.SlurmEvent{reg, node("n2", h, 0, 1)},
			alloc: alloc(map[string]int64{"n1": 30000})},
			Utilization{Allocated: 28800, Reported: 28800}},
		{"a slurmctld that did not answer is down", clusterFacts{events: []store.SlurmEvent{reg, {Cluster: "c1", Start: h + 3000, End: h + 3600, State: 1, GPUs: 8}}},
			Utilization{Down: 4800, Idle: 24000, Reported: 28800}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hourUtil(&c.f, h, h+3600)
			if d := gocmp.Diff(c.want, got); d != "" {
				t.Errorf("hour (-want +got):\n%s", d)
			}
			if got.Reported != got.Allocated+got.Down+got.PlannedDown+got.Idle+got.Planned {
				t.Errorf("the parts %+v do not add up to the capacity", got)
			}
		})
	}
}

// TestFactSweep: the hours a sweep hands hourUtil give the same
// utilization as all the facts, over random events and reservations of
// two days.
func TestFactSweep(t *testing.T) {
	const h0 = int64(1767225600)
	rng := rand.New(rand.NewPCG(1, 14))
	for trial := range 50 {
		f := clusterFacts{alloc: map[int64]int64{}}
		f.events = append(f.events, store.SlurmEvent{Cluster: "c1", Start: h0 - 3600, GPUs: 8})
		nodes := []string{"n1", "n2"}
		var t0 int64
		for range 10 {
			t0 += rng.Int64N(4 * 3600)
			e := store.SlurmEvent{Cluster: "c1", Node: nodes[rng.IntN(2)], Start: h0 + t0, State: uint32(1 + rng.IntN(2)*0x1000), GPUs: 4}
			if rng.IntN(4) > 0 {
				e.End = e.Start + 1 + rng.Int64N(6*3600)
			}
			f.events = append(f.events, e)
		}
		var r0 int64
		for i := range 6 {
			r0 += rng.Int64N(6 * 3600)
			n := nodes[rng.IntN(2)]
			x := newResv(store.SlurmReservation{Cluster: "c1", ID: int64(i), Start: h0 + r0, End: h0 + r0 + 1 + rng.Int64N(5*3600), Nodes: n, GPUs: 4}, []string{n})
			f.resvs = append(f.resvs, x)
		}
		for h := h0; h < h0+48*3600; h += 3600 {
			f.alloc[h] = rng.Int64N(8 * 3600)
		}
		full := f
		full.events, full.resvs = slices.Clone(f.events), slices.Clone(f.resvs)
		slices.SortStableFunc(full.events, func(a, b store.SlurmEvent) int { return cmp.Compare(a.Start, b.Start) })
		sw := newFactSweep(&f)
		for h := h0; h < h0+48*3600; h += 3600 {
			want, got := hourUtil(&full, h, h+3600), hourUtil(sw.at(h, h+3600), h, h+3600)
			if d := gocmp.Diff(want, got); d != "" {
				t.Fatalf("trial %d, hour %d: sweep (-all facts +sweep):\n%s", trial, (h-h0)/3600, d)
			}
		}
	}
}
