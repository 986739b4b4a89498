// Package poll is how a test waits for something it cannot be told of:
// it asks again every step until a generous deadline, so that a busy
// machine makes the test slower, not failing, and no sleep stands in for
// a synchronisation.
package poll

import (
	"testing"
	"time"
)

// Until calls cond every step until it holds, failing the test with what
// cond said last when timeout passes first. It works in a t.Cleanup too
// (the test's context is done by then, so Until does not watch it).
func Until(t testing.TB, what string, timeout, step time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after %s; last: %s", what, timeout, last)
		}
		time.Sleep(step) // the poll's interval, not a synchronisation
	}
}

// True is Until for a condition with nothing to say but whether it holds.
func True(t testing.TB, what string, timeout, step time.Duration, cond func() bool) {
	t.Helper()
	Until(t, what, timeout, step, func() (bool, string) { return cond(), "" })
}
