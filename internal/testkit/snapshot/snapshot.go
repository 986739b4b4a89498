// Package snapshot writes a node's live snapshot for a test the way the
// node's agent does: the whole document renamed into place, so that a
// reader sees the old snapshot or the new one, never part of one.
package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aicloud/gpusuite/internal/record"
)

// Write puts l as its node's snapshot in dir
// (dir/record.LiveFileName(l.Node)), failing the test on an error.
func Write(t testing.TB, dir string, l record.Live) {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+l.Node+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, record.LiveFileName(l.Node))); err != nil {
		t.Fatal(err)
	}
}
