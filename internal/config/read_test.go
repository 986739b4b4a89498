package config

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/files"
)

// TestReadFile checks that the buffer sized from stat holds the whole file,
// also when stat's size is wrong (a /proc file stats as 0 bytes).
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return files.Write(t, filepath.Join(dir, name), body) }
	exact := strings.Repeat("#", MaxFileBytes)
	tests := []struct {
		name, path, want string
	}{
		{name: "empty", path: write("empty.toml", ""), want: ""},
		{name: "small", path: write("small.toml", "[spool]\ndir = \"/s\"\n"), want: "[spool]\ndir = \"/s\"\n"},
		{name: "exactly the limit", path: write("exact.toml", exact), want: exact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("ReadFile (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("stat says 0 bytes", func(t *testing.T) {
		got, err := ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(got, []byte("\nVmRSS:")) {
			t.Errorf("ReadFile(/proc/self/status) = %q, want the whole file (through VmRSS)", got)
		}
	})
}
