// Package testkit is the one home of the test support that more than one
// package's tests share; each subpackage stands up one thing:
//
//   - browser: Debian's chromium, headless, and screenshots.
//   - clock: the clock a test moves, injected as the code's Now.
//   - cmdline: the command-line checks every binary's tests share (help,
//     man pages, completions, flags over the config file).
//   - fetch: one bounded GET of what a test's server serves.
//   - files: a test's files written, read and their mtimes to the
//     nanosecond.
//   - fusefs: a directory served through FUSE the way an NFS server does.
//   - ledgerdb: a ledger per test on the engine under test, and plain SQL
//     on its rows (with internal/store, the one other package that speaks
//     SQL).
//   - logs: a log read while another goroutine or process writes it.
//   - loopback: a free loopback address for a test's server to listen on.
//   - poll: the one way a test waits, polling until a generous deadline.
//   - pty: a pseudo-terminal, for what a program does on a terminal.
//   - reexec: the test binary copied where another user may run it.
//   - registry: a real container registry with TLS and logins.
//   - slurm: the real Slurm clusters of make test, shared or exclusive.
//   - snapshot: a node's live snapshot written as its agent writes it.
//   - tlscert: web config files with a throwaway certificate.
//
// This package itself holds the one rule they all follow: a test that
// lacks what it needs skips, but fails under make test (Missing,
// NeedRoot); and GoList, the layering tests' reading of go list. Only tests link these packages: deps_test.go fails when a
// binary does.
package testkit
