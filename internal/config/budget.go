package config

import (
	"fmt"
)

// Budget is the [budget] section: GPU budgets per account (optionally
// per user) per period, their burn-down and their warnings
// (docs/budgets.md).
type Budget struct {
	// FiscalStart is the month (1..12) the fiscal year, and its
	// quarters, begin in.
	FiscalStart int `toml:"fiscal_start"`
	// Warn are the shares of a budget used (percent) at which its team
	// is warned, once per period each.
	Warn []int `toml:"warn"`
	// WarnRunOut warns once per period when the last 7 days' pace runs
	// the budget out before the period ends.
	WarnRunOut bool `toml:"warn_runout"`
	// Entry are the budgets. The commands that read them check them
	// (budget.Parse, exit 2; serve refuses to start), not Load: a typo in
	// a budget must not stop the hooks' accounting.
	Entry []BudgetEntry `toml:"entry"`
}

// BudgetEntry is one budget as the file writes it (budget.Entry):
//
//	[[budget.entry]]
//	account = "vision"
//	user    = ""           # optional: a user's budget within the account
//	period  = "quarter"    # month, quarter, fiscal-year or range
//	from    = "2026-04-01" # range only, inclusive
//	to      = "2026-06-30" # range only, inclusive
//	amount  = 2000
//	unit    = "gpu-hours"  # or billing
type BudgetEntry struct {
	Account string  `toml:"account"`
	User    string  `toml:"user"`
	Period  string  `toml:"period"`
	From    string  `toml:"from"`
	To      string  `toml:"to"`
	Amount  float64 `toml:"amount"`
	Unit    string  `toml:"unit"`
}

func defaultBudget() Budget {
	return Budget{FiscalStart: 1, Warn: []int{50, 80, 100}, WarnRunOut: true}
}

func (b *Budget) validate() error {
	if b.FiscalStart < 1 || b.FiscalStart > 12 {
		return fmt.Errorf("key \"budget.fiscal_start\": %d is not a month 1..12", b.FiscalStart)
	}
	if len(b.Warn) > 10 {
		return fmt.Errorf("key \"budget.warn\": %d thresholds, at most 10", len(b.Warn))
	}
	for i, w := range b.Warn {
		if w < 1 || w > 1000 || (i > 0 && w <= b.Warn[i-1]) {
			return fmt.Errorf("key \"budget.warn\": %v is not rising percents within 1..1000", b.Warn)
		}
	}
	return nil
}
