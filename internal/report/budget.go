package report

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// DayUse is one account's and user's usage on one day.
type DayUse struct {
	Day           time.Time // midnight in the window's zone
	Account, User string
	Usage
}

// BudgetDays reads the usage of f's accounts per day of w, the days cut
// at midnight in w's zone, summed per account and user, in day order.
// w is widened to whole hours as reports read it (HourWindow).
func (d *Ledger) BudgetDays(ctx context.Context, w timespec.Window, f Filter) ([]DayUse, error) {
	w = HourWindow(w)
	if err := timespec.CheckBuckets(w, timespec.Day); err != nil {
		return nil, err
	}
	bs := timespec.Buckets(w, timespec.Day)
	type key struct {
		day           int
		account, user string
	}
	sums := map[key]*Usage{}
	err := d.Facts(ctx, bs, f, false, func(x *Fact) {
		i := timespec.Find(bs, x.Start)
		if i < 0 {
			return
		}
		k := key{i, x.Account, x.User}
		if sums[k] == nil {
			sums[k] = &Usage{}
		}
		sums[k].Add(x.Usage)
	})
	if err != nil {
		return nil, err
	}
	out := make([]DayUse, 0, len(sums))
	for k, u := range sums {
		day := bs[k.day].Start
		if k.day == 0 {
			// the first bucket may be clipped to the window: name its day
			s := day
			day = time.Date(s.Year(), s.Month(), s.Day(), 0, 0, 0, 0, s.Location())
		}
		out = append(out, DayUse{Day: day, Account: k.account, User: k.user, Usage: *u})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Day.Equal(b.Day) {
			return a.Day.Before(b.Day)
		}
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		return a.User < b.User
	})
	return out, nil
}

// BudgetAmount is u in a budget's unit: allocated GPU-hours, or
// billing-unit-hours.
func BudgetAmount(u Usage, unit budget.Unit) float64 {
	if unit == budget.Billing {
		return u.Billing / 3600
	}
	return float64(u.AllocS) / 3600
}

// Burns computes each budget's burn-down at now, its period in loc
// (fiscal: the fiscal year's first month): one read of the daily
// rollups per distinct period.
func (d *Ledger) Burns(ctx context.Context, bs []budget.Budget, now time.Time, loc *time.Location, fiscal time.Month) ([]budget.Burndown, error) {
	type read struct {
		accounts []string
		days     []DayUse
	}
	periods := map[budget.Period]*read{}
	var order []budget.Period
	ps := make([]budget.Period, len(bs)) // each budget's
	for i, b := range bs {
		p := b.Period(now, loc, fiscal)
		ps[i] = p
		r := periods[p]
		if r == nil {
			r = &read{}
			periods[p] = r
			order = append(order, p)
		}
		r.accounts = append(r.accounts, b.Account)
	}
	for _, p := range order {
		r := periods[p]
		end := now
		if end.After(p.End) {
			end = p.End
		}
		if !end.After(p.Start) {
			continue
		}
		days, err := d.BudgetDays(ctx, timespec.Window{Start: p.Start, End: end}, Filter{Accounts: r.accounts})
		if err != nil {
			return nil, fmt.Errorf("budget usage %s: %w", p.Label, err)
		}
		r.days = days
	}
	out := make([]budget.Burndown, 0, len(bs))
	for i, b := range bs {
		p := ps[i]
		var days []budget.Day
		var users []string
		for _, u := range periods[p].days {
			if u.Account == b.Account && (b.User == "" || u.User == b.User) {
				days = append(days, budget.Day{Start: u.Day, Used: BudgetAmount(u.Usage, b.Unit)})
				if !slices.Contains(users, u.User) {
					users = append(users, u.User)
				}
			}
		}
		bd := budget.Burn(b, p, now, days)
		slices.Sort(users)
		bd.Users = users
		out = append(out, bd)
	}
	return out, nil
}

// BudgetAccounts says whether an account may hold a budget: the ledger
// recorded usage under it, or the teams file names it. A new ledger
// without a teams file knows no account yet: it takes every one (nil),
// so that a site's first serve starts.
func (d *Ledger) BudgetAccounts(ctx context.Context, m *teams.Mapping) (func(string) bool, error) {
	accts, err := d.Distinct(ctx, "account")
	if err != nil {
		return nil, err
	}
	if len(accts) == 0 && (m == nil || !m.Mapped()) {
		return nil, nil
	}
	return func(a string) bool {
		return accts[a] || (m != nil && m.Mapped() && m.Team(a, "") != teams.Unassigned)
	}, nil
}
