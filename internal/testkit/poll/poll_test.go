package poll

import (
	"strings"
	"testing"
	"time"
)

// fake records how a poll ended without ending the real test.
type fake struct {
	testing.TB
	failed string
}

func (f *fake) Helper() {}
func (f *fake) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f) // Fatalf does not return
}

// run polls on a fake test and returns its failure ("" when none).
func run(t *testing.T, timeout time.Duration, cond func() (bool, string)) (failed string) {
	f := &fake{TB: t}
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
		failed = f.failed
	}()
	Until(f, "the thing", timeout, time.Millisecond, cond)
	return ""
}

func TestUntil(t *testing.T) {
	// A condition that holds gets a minute (a busy machine is slow); one
	// that never does, a moment.
	for _, tc := range []struct {
		name    string
		cond    func(n int) bool
		timeout time.Duration
		fail    string
	}{
		{name: "at once", cond: func(int) bool { return true }, timeout: time.Minute},
		{name: "on the third ask", cond: func(n int) bool { return n >= 3 }, timeout: time.Minute},
		{name: "never", cond: func(int) bool { return false }, timeout: 20 * time.Millisecond, fail: "not so after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			got := run(t, tc.timeout, func() (bool, string) { n++; return tc.cond(n), "asked" })
			if !strings.Contains(got, tc.fail) || (tc.fail == "") != (got == "") {
				t.Errorf("failure %q, want one with %q", got, tc.fail)
			}
		})
	}
}

// TestUntilInCleanup: a cleanup may wait too, after the test's context
// is done.
func TestUntilInCleanup(t *testing.T) {
	n := 0
	t.Run("test", func(t *testing.T) {
		t.Cleanup(func() {
			if got := run(t, time.Minute, func() (bool, string) { n++; return n >= 2, "" }); got != "" {
				t.Errorf("poll in a cleanup failed: %s", got)
			}
		})
	})
	if n < 2 {
		t.Errorf("cond asked %d times, want 2", n)
	}
}
