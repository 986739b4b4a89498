// Package exitcode is the suite's one exit policy: 0 success, 2 a bad
// command line, 1 any other failure. It imports nothing, so that the
// programs that parse their line with the standard library (the hooks,
// hook-gpus, the bench tools) use it as the urfave/cli ones do (through
// cliwire), without linking urfave/cli. The hooks themselves exit 0 on every accounting
// error (a failing prolog drains the node); Failure is their health
// check's verdict.
package exitcode

const (
	// OK is success.
	OK = 0
	// Failure is any failure but a bad command line.
	Failure = 1
	// Usage is a bad command line.
	Usage = 2
)

// UsageError marks bad input on the command line: exit Usage. It lives
// here, the lowest package of the policy, so that a library without a
// CLI (internal/container) and cliwire mark it with one type.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
