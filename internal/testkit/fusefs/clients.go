package fusefs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TwoClients mounts one backing directory twice with default options: a
// and b are two NFS clients of a server with 1 s timestamps. Both are
// unmounted when the test ends.
func TwoClients(t testing.TB) (a, b *Mount) {
	t.Helper()
	base := t.TempDir()
	backing, da, db := filepath.Join(base, "server"), filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{backing, da, db} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if a, err = New(backing, da, Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = New(backing, db, Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// StartOfSecond sleeps until just after a whole second, so that the next
// few writes share one timestamp on a mount of the default 1 s granularity.
// The sleep is the condition under test (two writes in one second), not
// synchronisation.
func StartOfSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 20*time.Millisecond).Sub(now))
}
