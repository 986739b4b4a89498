package report

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// BenchmarkClusterUtilizationYear: report cluster over a year of a
// 1,000-GPU cluster (125 nodes, every node-hour allocated in
// rollup_hourly: 1.1 million rows, more than the year benchmark's ledger
// holds per node), with a drain a week and a reservation a month.
func BenchmarkClusterUtilizationYear(b *testing.B) {
	l := ledgerdb.NewLedger(b)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(1, 0, 0)
	st, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		b.Fatal(err)
	}
	f := store.ClusterFacts{From: start.Unix(), To: end.Unix(), Events: []store.SlurmEvent{{Cluster: "c1", Start: start.Unix() - 86400, GPUs: 1000}}}
	for w := start; w.Before(end); w = w.AddDate(0, 0, 7) {
		f.Events = append(f.Events, store.SlurmEvent{Cluster: "c1", Node: "n7", Start: w.Unix() + 3600, End: w.Unix() + 5*3600, State: 0x201, GPUs: 8})
	}
	for m := start; m.Before(end); m = m.AddDate(0, 1, 0) {
		f.Reservations = append(f.Reservations, store.SlurmReservation{Cluster: "c1", ID: m.Unix(), Start: m.Unix(), End: m.Unix() + 8*3600, Nodes: "n[1-8]", GPUs: 64})
	}
	bt, err := st.Begin(context.Background(), end)
	if err == nil {
		err = bt.SetClusterFacts(f)
	}
	if err == nil {
		err = bt.Commit()
	}
	st.Close()
	if err != nil {
		b.Fatal(err)
	}
	ledgerdb.Tx(b, l.Loc(), func(exec func(string, ...any)) {
		for n := int64(1); n <= 125; n++ {
			exec(`INSERT INTO nodes(id, cluster, name) VALUES (?, 'c1', ?)`, n, "n"+strconv.FormatInt(n, 10))
		}
		for h := start.Unix() / 3600; h < end.Unix()/3600; h++ {
			for n := int64(1); n <= 125; n++ {
				exec(`INSERT INTO rollup_hourly(hour, cluster, user, account, partition, node_id, model, ignored, alloc_gpu_s) VALUES (?, 'c1', 'u', 'a', 'p', ?, 'm', 0, ?)`, h, n, 8*1800)
			}
		}
	})
	db, err := OpenDB(context.Background(), l.Loc(), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := db.Scope(ScopeRequest{})
	if err != nil {
		b.Fatal(err)
	}
	r := ClusterRequest{Window: timespec.Window{Start: start, End: end}, Period: timespec.Month, Scope: s}
	b.ResetTimer()
	for range b.N {
		rows, err := db.ClusterUtilization(context.Background(), r)
		if err != nil || len(rows) != 12 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}
