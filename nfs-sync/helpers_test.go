package main

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 10 ms for up to d; callers give d generously
// (30 s and more), so a busy machine is slower but does not fail.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, d, 10*time.Millisecond, cond)
}

// settled is how long the tests wait for a condition the daemon must reach.
const settled = 60 * time.Second

func mtime(t *testing.T, p string) time.Time {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return time.Unix(st.Mtim.Unix())
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
