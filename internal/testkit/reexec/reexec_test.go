package reexec

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCopy: the copy is the test binary, executable by anyone, in a
// directory anyone may traverse.
func TestCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := Copy(t, dir, "copy.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copy differs from the test binary (%d bytes, want %d)", len(got), len(want))
	}
	for _, p := range []string{filepath.Dir(dir), dir, bin} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want 0755", p, fi.Mode().Perm())
		}
	}
}
