package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// waitFor polls cond every 10 ms for up to d; callers give d generously
// (30 s and more), so a busy machine is slower but does not fail.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, d, 10*time.Millisecond, cond)
}

// settled is how long the tests wait for a condition the daemon must reach.
const settled = 60 * time.Second

// watch runs nfs-sync with args (stdout discarded, stderr into stderr)
// until stop is called; stop fails the test unless it then exits 0
// within settled.
func watch(t *testing.T, args []string, env map[string]string, stderr *logs.Buffer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- MainContext(ctx, args, io.Discard, stderr, envFunc(env)) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
			}
		case <-time.After(settled):
			t.Fatal("watch did not stop")
		}
	}
}
