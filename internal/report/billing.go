package report

import (
	"context"
	"fmt"
	"math"

	"github.com/aicloud/gpusuite/internal/report/table"
)

// The TRES a report counts (Request.TRES, sreport's -T).
const (
	TRESGPU     = "gres/gpu" // allocated GPU-seconds: the default
	TRESBilling = "billing"  // billing-unit-seconds (docs/budgets.md)
)

// CheckTRES refuses a TRES a report cannot count.
func CheckTRES(tres string) error {
	switch tres {
	case "", TRESGPU, TRESBilling:
		return nil
	}
	return badInput("--tres %q is not %s or %s", tres, TRESGPU, TRESBilling)
}

// HasBilling says whether the ledger knows billing weights: only then do
// reports show a billing column.
func (d *Ledger) HasBilling(ctx context.Context) (bool, error) {
	return d.st.HasBilling(ctx)
}

// billingView is u as a billing report counts it: its billing in the
// allocation's place (what rows are ordered and shared by), and its jobs.
func billingView(u Usage) Usage {
	return Usage{AllocS: int64(math.Round(u.Billing)), Jobs: u.Jobs, Billing: u.Billing}
}

// columnsOf are the usage columns of an aggregate report: a billing
// report's (BILLING, JOBS, SHARE%), or the GPU columns with BILLING after
// ALLOC where the site has weights (billing), else as before.
func columnsOf(tres string, billing bool) []table.Column {
	cols := usageColumns()
	bill := table.Column{Key: "billing", Title: "BILLING", Kind: table.GPUSeconds, Drop: 3}
	if tres == TRESBilling {
		return []table.Column{bill, cols[5], cols[6]}
	}
	if !billing {
		return cols
	}
	return append([]table.Column{cols[0], bill}, cols[1:]...)
}

// cellsOf are the cells of columnsOf.
func cellsOf(tres string, billing bool) func(u Usage, clusterAlloc int64) []any {
	return func(u Usage, clusterAlloc int64) []any {
		c := usageCells(u, clusterAlloc)
		if tres == TRESBilling {
			return []any{u.Billing, c[5], c[6]}
		}
		if !billing {
			return c
		}
		return append([]any{c[0], u.Billing}, c[1:]...)
	}
}

// billingOf is what r's report shows of billing: the TRES (a billing
// report turns every fact into billingView) and whether a GPU report has
// a billing column.
func (d *Ledger) billingOf(ctx context.Context, r Request) (tres string, column bool, err error) {
	if err := CheckTRES(r.TRES); err != nil {
		return "", false, err
	}
	if r.TRES == TRESBilling {
		return TRESBilling, false, nil
	}
	has, err := d.HasBilling(ctx)
	if err != nil {
		return "", false, fmt.Errorf("report: %w", err)
	}
	return TRESGPU, has, nil
}
