// Package budget holds GPU budgets per Slurm account (optionally per user)
// per period, and their burn-down: how much is used and left, the share
// of the period elapsed, the pace of the last 7 days and the date the
// budget runs out at that pace (docs/budgets.md). It is logic only: the
// entries come from the config ([[budget.entry]], internal/config), the
// daily usage from the ledger through report.Ledger.BudgetDays.
//
// Files: budget.go (entries, their checks, periods), burn.go (the
// burn-down and the warnings due), metrics.go (the gauges on serve's
// /metrics), slurm.go (Slurm's GrpTRESMins and its usage, which is what
// stops jobs).
//
// API (the dashboard, the team report, the board's header, gpuacct
// report budget and the notifier use these):
//   - Entry: one configured budget, as the config file writes it;
//     Parse checks a list of them (unknown account, amount ≤ 0,
//     overlapping periods, bad dates: one line naming the entry) into
//     Budgets.
//   - Budget.Period(now, loc, fiscal): the period in force at now, its
//     bounds at midnight in loc (a month in Asia/Tokyo starts at 15:00
//     UTC the day before).
//   - Burn(b, p, now, days): the burn-down of one period from its daily
//     usage (Day, in the budget's unit): Burndown's Used, Left, Ratio,
//     Elapsed, Pace, RunOut, DaysLeft and Line (actual and ideal per
//     day).
//   - Crossed(bd, thresholds): the warnings due (Threshold), each with
//     the key that fires it once per period.
package budget

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
)

// Unit is what a budget's amount counts.
type Unit string

// The units: GPU-hours as reports print them (allocated), and billing
// units × hours as `sreport -T billing -t hours` prints them.
const (
	GPUHours Unit = "gpu-hours"
	Billing  Unit = "billing"
)

// Kind is how a budget's periods recur.
type Kind string

// The kinds. Quarters are counted from the fiscal year's first month
// (calendar quarters when it is January, April, July or October).
const (
	Month      Kind = "month"
	Quarter    Kind = "quarter"
	FiscalYear Kind = "fiscal-year"
	Range      Kind = "range" // one period, From to To
)

// Entry is one budget as the config writes it ([[budget.entry]]).
type Entry = config.BudgetEntry

// name is how messages name an entry: "vision", "vision/alice".
func name(account, user string) string {
	if user != "" {
		return account + "/" + user
	}
	return account
}

// Budget is a checked entry.
type Budget struct {
	Account, User string
	Kind          Kind
	// From and To are a range's first and last day (dates: read at
	// midnight in the site's zone).
	From, To civil
	Amount   float64
	Unit     Unit
}

// Name is "account" or "account/user".
func (b Budget) Name() string { return name(b.Account, b.User) }

// civil is a calendar date without a zone.
type civil struct {
	Y int
	M time.Month
	D int
}

func (c civil) in(loc *time.Location) time.Time { return time.Date(c.Y, c.M, c.D, 0, 0, 0, 0, loc) }

func (c civil) String() string { return fmt.Sprintf("%04d-%02d-%02d", c.Y, c.M, c.D) }

func parseDate(s string) (civil, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return civil{}, fmt.Errorf("%q is not a date such as 2026-04-01", s)
	}
	return civil{t.Year(), t.Month(), t.Day()}, nil
}

// MaxRangeDays bounds a range: its burn line has a point per day.
const MaxRangeDays = 1000

// MaxEntries bounds the budgets a site may configure: each costs a read
// of its period's daily usage on every pass.
const MaxEntries = 10000

// Parse checks entries. known reports whether an account is one the
// ledger or the teams file knows; nil accepts every account. Each error
// is one line naming the entry (budget.entry[i] and account/user).
func Parse(entries []Entry, known func(account string) bool) ([]Budget, error) {
	if len(entries) > MaxEntries {
		return nil, fmt.Errorf("%d budget entries: at most %d", len(entries), MaxEntries)
	}
	out := make([]Budget, 0, len(entries))
	for i, e := range entries {
		b, err := parseEntry(e, known)
		if err != nil {
			return nil, fmt.Errorf("budget.entry[%d] (%s): %w", i, name(e.Account, e.User), err)
		}
		for j, o := range out {
			if o.Account == b.Account && o.User == b.User && overlap(o, b) {
				return nil, fmt.Errorf("budget.entry[%d] (%s): its period overlaps budget.entry[%d]'s: one budget per account and user at a time", i, name(e.Account, e.User), j)
			}
		}
		out = append(out, b)
	}
	return out, nil
}

func parseEntry(e Entry, known func(string) bool) (Budget, error) {
	b := Budget{Account: strings.ToLower(e.Account), User: e.User, Kind: Kind(e.Period), Amount: e.Amount, Unit: Unit(e.Unit)}
	if b.Account == "" {
		return b, fmt.Errorf("no account")
	}
	if known != nil && !known(b.Account) {
		return b, fmt.Errorf("account %q is unknown (neither in the ledger nor in the teams file)", b.Account)
	}
	if !(e.Amount > 0) {
		return b, fmt.Errorf("amount %v is not positive", e.Amount)
	}
	switch b.Unit {
	case "":
		b.Unit = GPUHours
	case GPUHours, Billing:
	default:
		return b, fmt.Errorf("unit %q is not gpu-hours or billing", e.Unit)
	}
	switch b.Kind {
	case Month, Quarter, FiscalYear:
		if e.From != "" || e.To != "" {
			return b, fmt.Errorf("from and to are for period \"range\" only")
		}
		return b, nil
	case Range:
	default:
		return b, fmt.Errorf("period %q is not month, quarter, fiscal-year or range", e.Period)
	}
	var err error
	if b.From, err = parseDate(e.From); err != nil {
		return b, fmt.Errorf("from: %w", err)
	}
	if b.To, err = parseDate(e.To); err != nil {
		return b, fmt.Errorf("to: %w", err)
	}
	if b.To.in(time.UTC).Before(b.From.in(time.UTC)) {
		return b, fmt.Errorf("to %s is before from %s", b.To, b.From)
	}
	if b.To.in(time.UTC).Sub(b.From.in(time.UTC)) >= MaxRangeDays*24*time.Hour {
		return b, fmt.Errorf("%s..%s is longer than %d days", b.From, b.To, MaxRangeDays)
	}
	return b, nil
}

// overlap: a recurring budget covers all time, so it overlaps every
// other budget of its account and user; ranges overlap when they share
// a day.
func overlap(a, b Budget) bool {
	if a.Kind != Range || b.Kind != Range {
		return true
	}
	u := time.UTC
	return !a.To.in(u).Before(b.From.in(u)) && !b.To.in(u).Before(a.From.in(u))
}

// Period is one period of a budget: [Start, End) at midnights in the
// site's zone, and its label ("2026-04", "2026-Q2", "FY2026",
// "2026-04-01..2026-06-30").
type Period struct {
	Label      string
	Start, End time.Time
}

// Period is the budget's period in force at now in loc; fiscal is the
// fiscal year's first month. A range's period is its own, whatever now
// is.
func (b Budget) Period(now time.Time, loc *time.Location, fiscal time.Month) Period {
	now = now.In(loc)
	if fiscal < time.January || fiscal > time.December {
		fiscal = time.January
	}
	switch b.Kind {
	case Month:
		s := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, loc)
		return Period{Label: s.Format("2006-01"), Start: s, End: s.AddDate(0, 1, 0)}
	case Quarter, FiscalYear:
		// months since the fiscal year began
		since := (int(now.Month()) - int(fiscal) + 12) % 12
		fyStart := time.Date(now.Year(), now.Month()-time.Month(since), 1, 0, 0, 0, 0, loc)
		// The fiscal year is named by the calendar year it starts in.
		fy := fyStart.Year()
		if b.Kind == FiscalYear {
			return Period{Label: fmt.Sprintf("FY%d", fy), Start: fyStart, End: fyStart.AddDate(1, 0, 0)}
		}
		q := since / 3
		s := fyStart.AddDate(0, 3*q, 0)
		label := fmt.Sprintf("%d-Q%d", s.Year(), (int(s.Month())-1)/3+1)
		if fiscal != time.January {
			label = fmt.Sprintf("FY%d-Q%d", fy, q+1)
		}
		return Period{Label: label, Start: s, End: s.AddDate(0, 3, 0)}
	}
	s, e := b.From.in(loc), b.To.in(loc).AddDate(0, 0, 1)
	return Period{Label: b.From.String() + ".." + b.To.String(), Start: s, End: e}
}

// Accounts lists the accounts that have a budget, sorted, once each.
func Accounts(bs []Budget) []string {
	var out []string
	for _, b := range bs {
		if !slices.Contains(out, b.Account) {
			out = append(out, b.Account)
		}
	}
	slices.Sort(out)
	return out
}
