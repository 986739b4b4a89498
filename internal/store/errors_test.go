package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"
)

func TestTranslateKinds(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		err                  error
		busy, ledger, source bool
	}{
		{"busy", sqlite3.Error{Code: sqlite3.ErrBusy}, true, false, true},
		{"locked table", sqlite3.Error{Code: sqlite3.ErrLocked}, true, false, true},
		{"not a database", sqlite3.Error{Code: sqlite3.ErrNotADB}, false, true, true},
		{"disk full", fmt.Errorf("insert sample: %w", sqlite3.Error{Code: sqlite3.ErrFull}), false, false, true},
		{"corrupt", sqlite3.Error{Code: sqlite3.ErrCorrupt}, false, false, true},
		{"constraint", sqlite3.Error{Code: sqlite3.ErrConstraint}, false, false, false},
		{"no such table text", errors.New("no such table: nodes"), false, true, false},
		{"locked text", errors.New("database is locked"), true, false, true},
		{"other", errors.New("boom"), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err)
			if g := errors.Is(got, ErrBusy); g != tc.busy {
				t.Errorf("ErrBusy %v, want %v", g, tc.busy)
			}
			if g := errors.Is(got, ErrNotLedger); g != tc.ledger {
				t.Errorf("ErrNotLedger %v, want %v", g, tc.ledger)
			}
			if g := errors.Is(got, ErrResource); g != tc.source {
				t.Errorf("ErrResource %v, want %v", g, tc.source)
			}
			if got.Error() != tc.err.Error() {
				t.Errorf("message %q, want the driver's %q", got, tc.err)
			}
			if again := translate(got); again != got {
				t.Errorf("translated twice: %v", again)
			}
		})
	}
	if translate(nil) != nil {
		t.Error("translate(nil) is not nil")
	}
}

// TestOpenNotLedger: a file that is not a database reads as ErrNotLedger.
func TestOpenNotLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	if err := os.WriteFile(path, []byte("this is not a database, it is a note about one.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Path: path, ReadOnly: true})
	if !errors.Is(err, ErrNotLedger) {
		t.Fatalf("open a text file: %v, want ErrNotLedger", err)
	}
}
