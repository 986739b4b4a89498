package files

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteReadMtime: what Write wrote, Read reads; Mtime keeps the
// nanoseconds a file's time was set to, and reads a link's own time.
func TestWriteReadMtime(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, s := range []string{"first", "2nd"} {
		if got := Read(t, Write(t, p, s)); got != s {
			t.Errorf("Read after Write(%q) = %q", s, got)
		}
	}
	want := time.Unix(1_700_000_000, 123_456_789)
	if err := os.Chtimes(p, want, want); err != nil {
		t.Fatal(err)
	}
	if got := Mtime(t, p); !got.Equal(want) {
		t.Errorf("Mtime = %v, want %v", got, want)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if got := Mtime(t, link); got.Equal(want) {
		t.Errorf("Mtime of the link = the target's %v", got)
	}
}
