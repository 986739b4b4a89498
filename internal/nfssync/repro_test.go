package nfssync

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/files"
	"github.com/aicloud/gpusuite/internal/testkit/fusefs"
)

// sameSecondUpdate writes old then new (same size) through A within one
// second, with B reading in between, and asserts B is left with old.
func sameSecondUpdate(t *testing.T, a, b *fusefs.Mount, name, old, new string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		fusefs.StartOfSecond()
		begin := time.Now()
		files.Write(t, a.Path(name), old)
		if got := files.Read(t, b.Path(name)); got != old {
			t.Fatalf("B reads %q after the first write, want %q", got, old)
		}
		files.Write(t, a.Path(name), new)
		if time.Since(begin) > 900*time.Millisecond && attempt < 10 {
			continue // a slow machine crossed the second; try again
		}
		break
	}
	if got := files.Read(t, a.Path(name)); got != new {
		t.Fatalf("A reads %q after its own write, want %q", got, new)
	}
	if got := files.Read(t, b.Path(name)); got != old {
		t.Fatalf("B reads %q right after the same-second write, want the stale %q: the test file system does not reproduce the bug", got, old)
	}
}

// TestReproduceStaleRead shows the bug: without a touch, B keeps the old
// content after the second has passed, however often it reopens.
func TestReproduceStaleRead(t *testing.T) {
	a, b := fusefs.TwoClients(t)
	sameSecondUpdate(t, a, b, "f", "AAAA", "BBBB")
	// Letting time pass is what is under test: staleness outlives the second.
	time.Sleep(1500 * time.Millisecond)
	if got := files.Read(t, b.Path("f")); got != "AAAA" {
		t.Fatalf("B reads %q 1.5 s later, want the stale AAAA", got)
	}
	// A touch on B, which is not the last writer, does not help on a
	// real NFS client; here it does, so that case is not asserted.

	// The fix: touch through A once the second has passed.
	dir, err := os.Open(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	fx := NewFixer(1100*time.Millisecond, time.Now, discardLogger())
	if r := fx.Fix(int(dir.Fd()), "f", nil); r.Outcome != Fixed {
		t.Fatalf("Fix = %s (%s), want fixed", r.Outcome, r.Why)
	}
	if got := files.Read(t, b.Path("f")); got != "BBBB" {
		t.Fatalf("B reads %q after the fix, want BBBB", got)
	}
}

// TestWatchFixesSameSecondUpdate is the reproduction with the daemon
// watching mount A: B must come to read the new content (about 1.1 s after
// the last write on an idle machine; the wait allows a busy one 60 s), with
// each backend this machine offers.
func TestWatchFixesSameSecondUpdate(t *testing.T) {
	for _, backend := range []string{"inotify", "auto"} {
		t.Run(backend, func(t *testing.T) {
			a, b := fusefs.TwoClients(t)
			d, m := newTestDaemon(t, Options{Roots: []string{a.Dir}, Backend: backend, Settle: 100 * time.Millisecond}, 1100*time.Millisecond)
			startDaemon(t, d)
			if backend == "auto" {
				// fanotify needs root and a mount mark; when this kernel
				// refuses one on FUSE, auto must have fallen back.
				if got := d.Backend(); got != "fanotify" && got != "inotify" {
					t.Fatalf("backend %q", got)
				}
				t.Logf("auto chose %s", d.Backend())
			}
			sameSecondUpdate(t, a, b, "f", "AAAA", "BBBB")
			last := time.Now()
			waitFor(t, settled, "B still reads the stale content", func() bool { return files.Read(t, b.Path("f")) == "BBBB" })
			t.Logf("B saw the update %s after the last write", time.Since(last).Round(time.Millisecond))
			// B sees the touch before the daemon counts it.
			waitFor(t, settled, "the fix not counted", func() bool { return counter(m.Fixes) >= 1 })
			d.WaitIdle(context.Background())
			if got := counter(m.Fixes); got != 1 {
				t.Errorf("fixes = %v, want 1 (one per burst)", got)
			}
		})
	}
}
