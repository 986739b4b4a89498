package store

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestReadSnapshot: the reads of one snapshot see the ledger as it was
// at the first of them, though the writer commits between them; the next
// read outside it sees the commit. fn's error is ReadSnapshot's, as it
// is. On the engine under test.
func TestReadSnapshot(t *testing.T) {
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	w, err := Open(ctx, Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ledgerdb.Exec(t, l.Loc(), `INSERT INTO nodes (cluster, name) VALUES ('c1', 'n1')`)
	r, err := Open(ctx, Options{Path: l.Path, URL: l.URL, ReadOnly: true, BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	names := func(s *Ledger) []string {
		t.Helper()
		ns, err := s.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		sort.Strings(out)
		return out
	}
	var first, second []string
	err = r.ReadSnapshot(ctx, func(s *Ledger) error {
		first = names(s)
		ledgerdb.Exec(t, l.Loc(), `INSERT INTO nodes (cluster, name) VALUES ('c1', 'n2')`)
		second = names(s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"n1"}, first); d != "" {
		t.Errorf("first read in the snapshot (-want +got):\n%s", d)
	}
	if d := cmp.Diff(first, second); d != "" {
		t.Errorf("a commit between two reads of one snapshot showed (-first +second):\n%s", d)
	}
	if d := cmp.Diff([]string{"n1", "n2"}, names(r)); d != "" {
		t.Errorf("after the snapshot (-want +got):\n%s", d)
	}
	stop := errors.New("stop")
	if err := r.ReadSnapshot(ctx, func(*Ledger) error { return stop }); err != stop {
		t.Errorf("fn's error: ReadSnapshot returned %v, want it as it is", err)
	}
}
