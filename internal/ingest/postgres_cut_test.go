package ingest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// A PostgreSQL connection cut while a batch applies a good file stops
// the pass with a resource error and leaves the file in incoming: the
// link is not the file's fault, so the file is not quarantined.
func TestPostgresCutConnectionKeepsGoodFile(t *testing.T) {
	e := newEnv(t)
	if e.cfg.Store.URL == "" {
		e.cfg.Store.URL = ledgerdb.NewPostgresDB(t)
	}
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 2, Start: start,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 2, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	before, err := filepath.Glob(filepath.Join(e.cfg.Ingest.Incoming, "*", "samples.*"))
	if err != nil || len(before) == 0 {
		t.Fatalf("no sample files generated: %v", err)
	}
	// Cut at the first write of samples (the packs' insert).
	cutURL, _ := ledgerdb.ViaCutLink(t, e.cfg.Store.URL, []byte("INTO sample_packs("))
	s, err := store.Open(context.Background(), store.Options{URL: cutURL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return start.Add(2 * time.Hour) }, UID: os.Getuid()}).Pass(context.Background())
	if err == nil || !errors.Is(err, store.ErrResource) {
		t.Errorf("pass after a cut connection: %v, want a store resource error", err)
	}
	q, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Quarantine, "*", "*.reason"))
	for _, r := range q {
		b, _ := os.ReadFile(r)
		t.Errorf("quarantined %s: %s", filepath.Base(r), bytes.TrimSpace(b))
	}
	if res.Quarantined != 0 {
		t.Errorf("pass quarantined %d files after a cut connection, want 0", res.Quarantined)
	}
	after, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Incoming, "*", "samples.*"))
	if len(after) != len(before) {
		t.Errorf("sample files in incoming: %d after the pass, want all %d left for the next pass", len(after), len(before))
	}
}

// TestPostgresRecordPassBounded: recording the pass gives up after the
// busy timeout and a few seconds, even with a context that never ends.
// A batch of the same writer holds its one connection, as a server that
// never answers would: without a bound finish would wait forever.
func TestPostgresRecordPassBounded(t *testing.T) {
	e := newEnv(t)
	if e.cfg.Store.URL == "" {
		e.cfg.Store.URL = ledgerdb.NewPostgresDB(t)
	}
	e.cfg.Store.BusyTimeout.Duration = time.Second
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{URL: e.cfg.Store.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	done := make(chan error, 1)
	go func() { done <- in.finish(ctx, now, Result{}, nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("record pass with the connection held: %v, want a deadline error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("record pass with the connection held did not return within a minute")
	}
}
