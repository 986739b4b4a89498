package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestClusterFacts: a second read over an overlapping window replaces
// what it covers (an outage that ended takes its end, a reservation moved
// before it began loses its old times, one deleted goes), keeps what it
// does not cover, and writing the same facts again changes nothing; the
// next read starts at the last one.
func TestClusterFacts(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, ledgerdb.NewLedger(t), false)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	t0 := now.Unix() - 10*3600
	if _, ok, err := s.ClusterFactsMarks(ctx, "c"); err != nil || ok {
		t.Fatalf("ClusterFactsMarks on an empty ledger: ok %v, err %v", ok, err)
	}
	// Another cluster's facts in the same window, written by another
	// read (gpuacct migrate, say): c's reads must leave them.
	otherEvent := SlurmEvent{Cluster: "d", Node: "m1", Start: t0 + 60, State: 1, Reason: "other", GPUs: 2}
	otherResv := SlurmReservation{Cluster: "d", ID: 2, Name: "gone", Start: t0 + 100, End: t0 + 200, Nodes: "m1", GPUs: 2}
	old := SlurmEvent{Cluster: "c", Node: "n9", Start: t0 - 86400, End: t0 - 80000, State: 1, Reason: "old", GPUs: 4}
	first := ClusterFacts{From: t0, To: t0 + 3600, Clusters: []string{"c"}, Marks: &FactsMarks{Read: now.Unix(), Back: t0, Until: t0 - 86400},
		Events: []SlurmEvent{{Cluster: "c", Start: t0 - 86400, GPUs: 8},
			{Cluster: "c", Node: "n1", Start: t0 + 60, State: 0x201, Reason: "fan", GPUs: 4}},
		Reservations: []SlurmReservation{{Cluster: "c", ID: 1, Name: "r1", Start: t0 + 7200, End: t0 + 9000, Flags: "MAINT", Nodes: "n[1-2]", GPUs: 8},
			{Cluster: "c", ID: 2, Name: "gone", Start: t0 + 100, End: t0 + 200, Nodes: "n2", GPUs: 4}}}
	second := ClusterFacts{From: t0, To: t0 + 7200, Clusters: []string{"c"}, Marks: &FactsMarks{Read: now.Unix() + 60, Back: t0 - 86400, Until: t0 - 86400},
		Events: []SlurmEvent{{Cluster: "c", Start: t0 - 86400, GPUs: 8},
			{Cluster: "c", Node: "n1", Start: t0 + 60, End: t0 + 1800, State: 0x201, Reason: "fan", GPUs: 4},
			{Cluster: "c", Node: "n2", Start: t0 + 3000, State: 1, Reason: "dead", GPUs: 4}},
		Reservations: []SlurmReservation{{Cluster: "c", ID: 1, Name: "r1", Start: t0 + 7300, End: t0 + 9000, Flags: "MAINT", Nodes: "n[1-2]", GPUs: 8}}}
	batchOf(t, s, now, func(b *Batch) error {
		return b.SetClusterFacts(ClusterFacts{From: t0 - 86400, To: t0 - 80000, Events: []SlurmEvent{old}})
	})
	batchOf(t, s, now, func(b *Batch) error {
		return b.SetClusterFacts(ClusterFacts{From: t0, To: t0 + 3600, Clusters: []string{"d"}, Marks: &FactsMarks{Read: 42, Back: 41, Until: 40},
			Events: []SlurmEvent{otherEvent}, Reservations: []SlurmReservation{otherResv}})
	})
	batchOf(t, s, now, func(b *Batch) error { return b.SetClusterFacts(first) })
	if m, ok, err := s.ClusterFactsMarks(ctx, "c"); err != nil || !ok || m != *first.Marks {
		t.Errorf("ClusterFactsMarks after the first read = %+v, %v, %v; want %+v", m, ok, err, *first.Marks)
	}
	for range 2 {
		batchOf(t, s, now, func(b *Batch) error { return b.SetClusterFacts(second) })
	}
	if m, ok, err := s.ClusterFactsMarks(ctx, "c"); err != nil || !ok || m != *second.Marks {
		t.Errorf("ClusterFactsMarks after the second read = %+v, %v, %v; want %+v", m, ok, err, *second.Marks)
	}
	if m, ok, err := s.ClusterFactsMarks(ctx, "d"); err != nil || !ok || m != (FactsMarks{42, 41, 40}) {
		t.Errorf("ClusterFactsMarks of the other cluster = %+v, %v, %v; want its own", m, ok, err)
	}
	got, err := s.ClusterFactsIn(ctx, []string{"c"}, t0-90000, t0+10000)
	if err != nil {
		t.Fatal(err)
	}
	if other, err := s.ClusterFactsIn(ctx, []string{"d"}, t0-90000, t0+10000); err != nil ||
		cmp.Diff([]SlurmEvent{otherEvent}, other.Events) != "" || cmp.Diff([]SlurmReservation{otherResv}, other.Reservations) != "" {
		t.Errorf("the other cluster's facts after c's reads: %+v, %v; want them kept", other, err)
	}
	want := ClusterFacts{From: t0 - 90000, To: t0 + 10000,
		Events:       []SlurmEvent{second.Events[0], second.Events[1], second.Events[2], old},
		Reservations: second.Reservations}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("facts after two reads (-want +got):\n%s", d)
	}
	if got, err := s.ClusterFactsIn(ctx, []string{"none"}, t0-90000, t0+10000); err != nil || len(got.Events)+len(got.Reservations) != 0 {
		t.Errorf("another cluster's facts: %+v, %v; want none", got, err)
	}
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if err := b.SetClusterFacts(ClusterFacts{Events: make([]SlurmEvent, MaxClusterFacts+1)}); err == nil {
		t.Error("SetClusterFacts over the bound: nil error")
	}
}
