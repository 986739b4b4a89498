package web

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// A web connection opens one pool: every read goes through report.Ledger
// (conn holds nothing else, TestReadModel), and closing the source
// closes it.
func TestConnOnePool(t *testing.T) {
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	w, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src := newSource(Options{DB: l.Loc(), Reopen: time.Hour, BusyTimeout: time.Second})
	c, release, err := src.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.rep.MaxNodeID(ctx); err != nil {
		t.Fatalf("read through the open connection: %v", err)
	}
	release()
	if err := src.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.rep.MaxNodeID(ctx); err == nil {
		t.Error("the connection's ledger is still open after the source closed")
	}
}
