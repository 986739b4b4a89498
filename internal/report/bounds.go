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

// errRefused stops a report's read once its refusal is certain.
var errRefused = errors.New("report refused while reading")

// rowFloor counts, while a report reads, the rows buildTable will print
// at least: a group whose usage only grows (factPlan.adds) and holds an
// allocation, energy or a job survives settled, so it is a row, or one
// of its bucket's --limit. Once the count passes rowCap the report is
// refused whatever follows. Not for a tree, whose rows are its teams'.
type rowFloor struct {
	sure   []int // a bucket's groups known to be rows
	limit  int
	period bool
	n      int // the rows known so far
}

func newRowFloor(buckets, limit int, period bool) *rowFloor {
	f := &rowFloor{sure: make([]int, buckets), limit: limit, period: period}
	f.n = buckets * f.rows(0)
	return f
}

// rows are the rows of a bucket with c groups, as buildTable prints
// them: the first --limit, and a TOTAL under more than one, or under any
// (none too) by period.
func (f *rowFloor) rows(c int) int {
	if f.limit > 0 && c > f.limit {
		c = f.limit
	}
	if c > 1 || f.period {
		return c + 1
	}
	return c
}

// grew counts bucket i's group that usage u has just made a sure row
// (it was not before), and says whether the rows now pass rowCap.
func (f *rowFloor) grew(i int, before, u Usage) bool {
	if sureRow(before) || !sureRow(u) {
		return false
	}
	c := f.sure[i]
	f.sure[i]++
	f.n += f.rows(c+1) - f.rows(c)
	return f.n > rowCap
}

// sureRow: settled keeps u whatever non-negative usage is added to it:
// it rounds only the floats, which a rollup row may hold as a residue
// (idle 3e-14 GPU-seconds) with nothing else.
func sureRow(u Usage) bool {
	return u.AllocS > 0 || u.EnergyMJ > 0 || u.Jobs > 0
}

// negative: a row that takes usage away (none does in a plan that adds;
// a rollup row is a sum of usage).
func negative(u Usage) bool {
	return u.AllocS < 0 || u.EnergyMJ < 0 || u.Jobs < 0
}
