package notes

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/google/go-cmp/cmp"
)

func TestInForce(t *testing.T) {
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	b, err := st.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	g := 3
	for _, n := range []store.Note{
		{Cluster: "a", Node: "gpu01", GPU: &g, Until: now.Add(time.Hour), Text: "booked", Author: "ann", UID: 1000, Created: now.Add(-time.Minute)},
		{Cluster: "b", Node: "gpu02", Until: now.Add(time.Hour), Text: "node", Author: "bob", UID: 1001, Created: now.Add(-time.Minute)},
		{Cluster: "a", Node: "gpu03", Until: now.Add(-time.Second), Text: "over", Author: "ann", UID: 1000, Created: now.Add(-time.Hour)},
	} {
		if _, err := b.AddNote(n, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := InForce(st)(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []board.Note{
		{ID: 1, Cluster: "a", Node: "gpu01", GPU: &g, Until: now.Add(time.Hour), Text: "booked", Author: "ann"},
		{ID: 2, Cluster: "b", Node: "gpu02", Until: now.Add(time.Hour), Text: "node", Author: "bob"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("InForce (-want +got):\n%s", d)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := InForce(st)(cctx, now); err == nil {
		t.Error("InForce with a cancelled context: no error")
	}
}
