package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFileRooms holds the layout doc.go describes: every source file of
// the store names its room by prefix, and none is named like an ingest
// file, which would read as the same thing in two places.
func TestFileRooms(t *testing.T) {
	store := sourceFiles(t, ".")
	ingest := sourceFiles(t, filepath.Join("..", "ingest"))
	// notes.go moves out with the notes; doc.go is the map itself.
	unprefixed := []string{"doc.go", "notes.go"}
	var stray, twins []string
	for _, f := range store {
		if slices.Contains(ingest, f) {
			twins = append(twins, f)
		}
		if slices.Contains(unprefixed, f) {
			continue
		}
		if !slices.ContainsFunc([]string{"engine_", "write_", "read_", "copy"}, func(p string) bool { return strings.HasPrefix(f, p) }) {
			stray = append(stray, f)
		}
	}
	for _, tc := range []struct {
		name string
		got  []string
	}{
		{"without a room prefix", stray},
		{"named like an ingest file", twins},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff([]string(nil), tc.got); diff != "" {
				t.Errorf("store files %s (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

// sourceFiles are the non-test Go files of dir.
func sourceFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, n)
		}
	}
	return out
}
