package testkit

import (
	"os"
	"testing"
)

// RequireEnv is the variable make test sets to 1: there a test that lacks
// what it needs (root, a tool, a server) fails instead of skipping, so
// that nothing skips under make test.
const RequireEnv = "GPUSUITE_REQUIRE_SLURM"

// Missing ends a test that lacks what it needs: a skip, or a failure
// under make test.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	missing(t, os.Getenv, format, args...)
}

func missing(t testing.TB, getenv func(string) string, format string, args ...any) {
	t.Helper()
	if getenv(RequireEnv) == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// NeedRoot ends the test (Missing) unless it runs as root; why is what
// root is needed for ("give the queues to another user (chown)").
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root to %s", why)
	}
}
