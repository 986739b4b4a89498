// Package files writes, reads and stats a test's files, failing the test
// on an error, so that a fixture cannot fail silently. Mtime keeps the
// nanoseconds: the NFS tests compare times within a second.
package files

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Write writes s to the file at p (mode 0644), replacing what it held,
// and returns p, for a test table that names the files it writes.
func Write(t testing.TB, p, s string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Read is what the file at p holds.
func Read(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Mtime is p's modification time to the nanosecond, of the link itself
// where p is one.
func Mtime(t testing.TB, p string) time.Time {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return time.Unix(st.Mtim.Unix())
}
