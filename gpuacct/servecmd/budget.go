package servecmd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// budgetEvery is how often serve re-reads the budgets' usage: the
// rollups move with each pass, a budget's share in minutes does not.
const budgetEvery = 5 * time.Minute

// budgets is serve's view of the config's budgets: read from the ledger
// at most every budgetEvery, after an ingest pass, into the gauges of
// /metrics and for the notifier's budget rule.
type budgets struct {
	rep    *report.Ledger
	bs     []budget.Budget
	loc    *time.Location
	fiscal time.Month
	m      *budget.Metrics
	now    func() time.Time

	mu   sync.Mutex
	at   time.Time
	last []budget.Burndown
}

// openBudgets checks the config's budgets against the ledger (an
// account it does not know, a bad entry: serve refuses to start) and
// registers their gauges; nil when the config has none. close closes its
// reading handle.
func openBudgets(ctx context.Context, s *ingest.Setup, reg prometheus.Registerer) (*budgets, func(), error) {
	cfg := s.Config
	if len(cfg.Budget.Entry) == 0 {
		return nil, func() {}, nil
	}
	loc, err := timespec.LoadLocation(cfg.Report.TZ)
	if err != nil {
		return nil, nil, fmt.Errorf("budgets: %w", err)
	}
	m, err := teams.Load(cfg.Report.Teams)
	if err != nil {
		return nil, nil, fmt.Errorf("budgets: %w", err)
	}
	rep, err := report.OpenDB(ctx, cfg.Store.Location(), cfg.Store.BusyTimeout.Duration)
	if err != nil {
		return nil, nil, fmt.Errorf("budgets: %w", err)
	}
	known, err := rep.BudgetAccounts(ctx, m)
	if err != nil {
		rep.Close()
		return nil, nil, fmt.Errorf("budgets: %w", err)
	}
	bs, err := budget.Parse(cfg.Budget.Entry, known)
	if err != nil {
		rep.Close()
		// the config's mistake, as gpuacct report budget says it: exit 2
		return nil, nil, cliwire.Usagef("budgets: %v", err)
	}
	b := &budgets{rep: rep, bs: bs, loc: loc, fiscal: time.Month(cfg.Budget.FiscalStart), m: budget.NewMetrics(reg), now: s.Deps.Now}
	return b, func() { rep.Close() }, nil
}

// Burns is the budgets' burn-down at now, read again when the last read
// is budgetEvery old: the notifier's notify.BudgetSource.
func (b *budgets) Burns(ctx context.Context, now time.Time) ([]budget.Burndown, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last != nil && now.Sub(b.at) < budgetEvery && !now.Before(b.at) {
		return b.last, nil
	}
	bds, err := b.rep.Burns(ctx, b.bs, now, b.loc, b.fiscal)
	if err != nil {
		return nil, err
	}
	b.at, b.last = now, bds
	b.m.Set(bds, now)
	return bds, nil
}

// afterPass refreshes the gauges after an ingest pass, then runs next
// (the notifier's turn, nil when off).
func (b *budgets) afterPass(s *ingest.Setup, next func(context.Context)) func(context.Context) {
	if b == nil {
		return next
	}
	return func(ctx context.Context) {
		if _, err := b.Burns(ctx, b.now()); err != nil {
			s.Log.Error("budgets not read; trying again after the next pass", "err", err)
		}
		if next != nil {
			next(ctx)
		}
	}
}

// source is the notifier's budget source; nil without budgets.
func (b *budgets) source() notify.BudgetSource {
	if b == nil {
		return nil
	}
	return b.Burns
}
