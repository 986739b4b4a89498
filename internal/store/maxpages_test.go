package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSQLiteMaxPages: a writer capped a few pages above its file fails its
// writes as on a full disk (ErrResource), and the cap goes with it.
func TestSQLiteMaxPages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var pages int64
	if err := s.db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fill := func(s *Ledger) error {
		for i := range 2000 {
			p := Pass{Started: time.Unix(int64(i), 0), Finished: time.Unix(int64(i), 0), Error: strings.Repeat("x", 2000)}
			if err := s.RecordPass(ctx, p); err != nil {
				return err
			}
		}
		return nil
	}
	capped, err := Open(ctx, Options{Path: path, MaxPages: pages + 5})
	if err != nil {
		t.Fatal(err)
	}
	err = fill(capped)
	capped.Close()
	if !errors.Is(err, ErrResource) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("writing past the cap: %v, want a full-disk ErrResource", err)
	}
	free, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer free.Close()
	if err := fill(free); err != nil {
		t.Errorf("writing without the cap: %v", err)
	}
}
