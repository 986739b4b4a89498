package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFileRooms holds the layout doc.go describes: every source file of
// the store is in its map and names its room by prefix, and none is
// named like a file of another package of the module, which would read
// as the same thing in two places (doc.go, every package's map of
// itself, aside).
func TestFileRooms(t *testing.T) {
	store := sourceFiles(t, ".")
	others := otherFiles(t)
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var stray, twins, unmapped []string
	for _, f := range store {
		if f == "doc.go" {
			continue
		}
		if !strings.Contains(string(doc), f) {
			unmapped = append(unmapped, f)
		}
		if where, ok := others[f]; ok {
			twins = append(twins, f+" ~ "+where)
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
		{"named like another package's file", twins},
		{"missing from doc.go's file map", unmapped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff([]string(nil), tc.got); diff != "" {
				t.Errorf("store files %s (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

// otherFiles maps the non-test Go file names of the module's packages
// outside the store (its own subpackages are its rooms) to a directory
// that holds one.
func otherFiles(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || abs == self) {
			return filepath.SkipDir
		}
		for _, f := range sourceFiles(t, path) {
			if _, ok := out[f]; !ok {
				out[f] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
