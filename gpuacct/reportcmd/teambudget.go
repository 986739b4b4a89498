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
	known, err := db.BudgetAccounts(ctx, m)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	bs, err := budget.Parse(e.cfg.Budget.Entry, known)
	if err != nil {
		return cliwire.Usagef("%s: %v", cmd, err)
	}
	burns, err := db.Burns(ctx, bs, e.now, e.loc, time.Month(e.cfg.Budget.FiscalStart))
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	report.BudgetColumn(t, burns, m)
	return nil
}
