package report

import (
	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// BudgetColumn appends to a teams report (t) each team's budget used
// (budget_used_pct, BUDGET%): of the team's accounts' budgets in burns
// (users' own left out), the most used; empty for a team without one
// and on the totals. Only a site with budgets calls it, so that every
// other site's report keeps its bytes.
func BudgetColumn(t *table.Table, burns []budget.Burndown, m *teams.Mapping) {
	col := -1
	for i, c := range t.Columns {
		if c.Key == "team" {
			col = i
		}
	}
	if col < 0 {
		return
	}
	used := map[string]float64{}
	for _, bd := range burns {
		if bd.Budget.User != "" {
			continue
		}
		team := m.Team(bd.Budget.Account, "")
		if r, ok := used[team]; !ok || bd.Ratio > r {
			used[team] = bd.Ratio
		}
	}
	t.Columns = append(t.Columns, table.Column{Key: "budget_used_pct", Title: "BUDGET%", Kind: table.Percent, Drop: 8})
	for i := range t.Rows {
		r := &t.Rows[i]
		var cell any
		if name, ok := r.Cells[col].(string); ok && !r.Footer {
			if u, ok := used[name]; ok {
				cell = 100 * u
			}
		}
		r.Cells = append(r.Cells, cell)
	}
}
