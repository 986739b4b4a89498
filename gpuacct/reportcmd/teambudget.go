package reportcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// teamBudgets adds the budget column to a teams report when the config
// has budgets ([[budget.entry]]): each team's budgets in force now. A
// budget the ledger cannot place is the config's mistake: exit 2, as
// gpuacct report budget says it.
func teamBudgets(ctx context.Context, e *env, db *report.Ledger, m *teams.Mapping, t *table.Table) error {
	const cmd = "report teams"
	if len(e.cfg.Budget.Entry) == 0 {
		return nil
	}
	bs, err := checkBudgets(ctx, cmd, e, db, m)
	if err != nil {
		return err
	}
	burns, err := db.Burns(ctx, bs, e.now, e.loc, time.Month(e.cfg.Budget.FiscalStart))
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	report.BudgetColumn(t, burns, m)
	return nil
}

// checkBudgets is the config's budgets checked against the accounts the
// ledger and the teams file know: a bad entry is one line naming it,
// exit 2.
func checkBudgets(ctx context.Context, cmd string, e *env, db *report.Ledger, m *teams.Mapping) ([]budget.Budget, error) {
	known, err := db.BudgetAccounts(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	bs, err := budget.Parse(e.cfg.Budget.Entry, known)
	if err != nil {
		return nil, cliwire.Usagef("%s: %v", cmd, err)
	}
	return bs, nil
}
