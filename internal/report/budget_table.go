package report

import (
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// BudgetTable is gpuacct report budget: one row per budget's period at
// now, in the order configured. With slurm (asked: not nil) it adds the
// association's GrpTRESMins and Slurm's usage of it, in the budget's
// unit; "-" where Slurm has none.
func BudgetTable(burns []budget.Burndown, now time.Time, loc *time.Location, slurm []budget.SlurmLimit) *table.Table {
	t := &table.Table{Columns: []table.Column{
		{Key: "account", Title: "ACCOUNT", Kind: table.Text},
		{Key: "user", Title: "USER", Kind: table.Text},
		{Key: "period", Title: "PERIOD", Kind: table.Text},
		{Key: "unit", Title: "UNIT", Kind: table.Text, Drop: 3},
		{Key: "amount", Title: "BUDGET", Kind: table.ResourceHours},
		{Key: "used", Title: "USED", Kind: table.ResourceHours},
		{Key: "left", Title: "LEFT", Kind: table.ResourceHours},
		{Key: "used_pct", Title: "USED%", Kind: table.Percent},
		{Key: "elapsed_pct", Title: "ELAPSED%", Kind: table.Percent, Drop: 2},
		{Key: "pace_per_day", Title: "PER DAY (7D)", Kind: table.ResourceHours, Drop: 1},
		{Key: "runs_out", Title: "RUNS OUT", Kind: table.Text},
		{Key: "days_left", Title: "DAYS LEFT", Kind: table.ResourceHours, Drop: 1},
	}}
	for _, bd := range burns {
		var runOut any
		if bd.RunsOut() {
			runOut = bd.RunOut.In(loc).Format("2006-01-02")
		}
		cells := []any{bd.Budget.Account, bd.Budget.User, bd.Period.Label, string(bd.Budget.Unit),
			bd.Budget.Amount, bd.Used, bd.Left, 100 * bd.Ratio, 100 * bd.Elapsed, bd.Pace, runOut, bd.DaysLeft}
		if slurm != nil {
			var limit, used any
			if l, u, ok := budget.SlurmFor(slurm, bd.Budget); ok {
				limit, used = l, u
			}
			cells = append(cells, limit, used)
		}
		t.Rows = append(t.Rows, table.Row{Cells: cells})
	}
	if slurm != nil {
		t.Columns = append(t.Columns,
			table.Column{Key: "slurm_limit", Title: "SLURM LIMIT", Kind: table.ResourceHours},
			table.Column{Key: "slurm_used", Title: "SLURM USED", Kind: table.ResourceHours})
	}
	t.Title = fmt.Sprintf("GPU budgets at %s (%s)", now.In(loc).Format("2006-01-02 15:04"), zoneName(loc, now))
	t.Meta = []table.KV{{Key: "report", Value: "budget"}, {Key: "at", Value: now.In(loc).Format(time.RFC3339)}}
	t.Notes = []string{fmt.Sprintf("PER DAY = the last %d days' pace; RUNS OUT at that pace, blank: not before the period ends", budget.PaceDays),
		"these budgets only warn: Slurm's GrpTRESMins, where set, is what stops jobs"}
	if slurm != nil {
		t.Notes = append(t.Notes, "SLURM LIMIT and USED: the association's GrpTRESMins (billing, or gres/gpu for GPU-hours) and slurmctld's usage of it, in hours; Slurm's usage decays unless PriorityFlags has NO_DECAY")
	}
	return t
}
