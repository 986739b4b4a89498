// Package reexec puts the running test binary where another user may run
// it, for tests that re-execute themselves as that user (a reader of the
// ledger without the writer's rights, a flood of connections from a
// stranger).
package reexec

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Copy copies the test binary into dir as name and returns its path; dir
// and its parent are made traversable (0755) so that any user reaches it.
func Copy(t testing.TB, dir, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Copied in a stream: read whole, it would stay in this process's
	// resident memory, which the agent's soak test measures.
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	bin := filepath.Join(dir, name)
	out, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
