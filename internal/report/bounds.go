package report

import (
	"errors"
	"fmt"
)

// Bounds on what one report may cost (invariant 9): the same for
// gpuacct report and the web API, which passes these errors on as 400.
const (
	// MaxGroups is how many (period, row) sums one aggregate report may
	// hold while it reads: about 400 bytes each.
	MaxGroups = 50_000
	// MaxRows is how many rows one report may print.
	MaxRows = 10_000
	// MaxLimit is the largest --limit (and the API's limit).
	MaxLimit = 10_000
)

// groupCap and rowCap are MaxGroups and MaxRows; tests lower them.
var groupCap, rowCap = MaxGroups, MaxRows

// BadInput is an error in what was asked for, not in the ledger: the
// CLI's usage error, the API's 400.
type BadInput struct{ Err error }

func (e *BadInput) Error() string { return e.Err.Error() }
func (e *BadInput) Unwrap() error { return e.Err }

// IsBadInput reports whether err is the asker's to fix.
func IsBadInput(err error) bool {
	var b *BadInput
	return errors.As(err, &b)
}

func badInput(format string, args ...any) error {
	return &BadInput{Err: fmt.Errorf(format, args...)}
}

// tooBig says a report would be over a bound and how to narrow it.
func tooBig(what string, n int) error {
	return badInput("the report would hold more than %d %s: shorten the window (--start/--end), use a longer --period, filter (--users, --teams...) or set --limit", n, what)
}

// SetCaps lowers MaxGroups and MaxRows (tests of the refusal); the
// returned func restores them.
func SetCaps(groups, rows int) (restore func()) {
	groupCap, rowCap = groups, rows
	return func() { groupCap, rowCap = MaxGroups, MaxRows }
}
