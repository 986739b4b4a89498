package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"busy", fmt.Errorf("read schema version: %w", store.ErrBusy),
			"read /d/acct.db: database is locked: the ingest held it longer than store.busy_timeout (100ms); try again: read schema version: database is locked"},
		{"not a ledger", fmt.Errorf("open store: %w", store.ErrNotLedger),
			"read /d/acct.db: not a gpusuite accounting database: open store: not a gpusuite accounting database"},
		{"other", errors.New("disk I/O error"), "read /d/acct.db: disk I/O error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe("/d/acct.db", 100*time.Millisecond, tc.err)
			if got.Error() != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("%v does not wrap %v", got, tc.err)
			}
		})
	}
}

// TestSQLiteOpenDBNotLedger: a file that is no database is said to be no
// ledger, on one line.
func TestSQLiteOpenDBNotLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acct.db")
	if err := os.WriteFile(path, []byte("a text file, not a ledger at all, long enough to be read as one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDB(context.Background(), path, time.Second)
	if !errors.Is(err, store.ErrNotLedger) {
		t.Fatalf("OpenDB of a text file: %v, want store.ErrNotLedger", err)
	}
	want := "read " + path + ": not a gpusuite accounting database: "
	if got := err.Error(); !strings.HasPrefix(got, want) {
		t.Errorf("message %q does not start %q", got, want)
	}
}
