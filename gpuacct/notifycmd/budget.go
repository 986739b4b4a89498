package notifycmd

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// budgets is the budget rule's source for one pass, as gpuacct serve
// gives its notifier: the config's budgets, checked against the ledger,
// read through a reading handle (done closes it). nil without budgets.
// A budget the ledger cannot place is a usage error naming the entry.
func (e *env) budgets(ctx context.Context) (src notify.BudgetSource, done func(), err error) {
	if len(e.cfg.Budget.Entry) == 0 {
		return nil, func() {}, nil
	}
	m, err := teams.Load(e.cfg.Report.Teams)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: budgets: %w", e.title, err)
	}
	rep, err := report.OpenDB(ctx, e.cfg.Store.Location(), e.cfg.Store.BusyTimeout.Duration)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: budgets: %w", e.title, err)
	}
	known, err := rep.BudgetAccounts(ctx, m)
	if err != nil {
		rep.Close()
		return nil, nil, fmt.Errorf("%s: budgets: %w", e.title, err)
	}
	bs, err := budget.Parse(e.cfg.Budget.Entry, known)
	if err != nil {
		rep.Close()
		return nil, nil, cliwire.Usagef("%s: %v", e.title, err)
	}
	fiscal := time.Month(e.cfg.Budget.FiscalStart)
	return func(ctx context.Context, now time.Time) ([]budget.Burndown, error) {
		return rep.Burns(ctx, bs, now, e.loc, fiscal)
	}, func() { rep.Close() }, nil
}
