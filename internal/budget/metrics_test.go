package budget

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetrics: the gauges hold the account budgets in force only.
func TestMetrics(t *testing.T) {
	bs, err := Parse([]Entry{
		{Account: "vision", Period: "month", Amount: 300},
		{Account: "vision", User: "alice", Period: "month", Amount: 10},
		{Account: "nlp", Period: "range", From: "2026-01-01", To: "2026-01-31", Amount: 5},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := utc("2026-03-11T00:00:00Z")
	var bds []Burndown
	for _, b := range bs {
		p := b.Period(now, time.UTC, time.January)
		bds = append(bds, Burn(b, p, now, days(time.UTC, "2026-03-01", 10, 10)))
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Set(bds, now)
	want := `
# HELP gpuacct_budget_days_left Days until the account's budget in force runs out at the last 7 days' pace, or until its period ends when it does not run out before.
# TYPE gpuacct_budget_days_left gauge
gpuacct_budget_days_left{account="vision"} 20
# HELP gpuacct_budget_used_ratio Share of the account's budget in force used (1: spent), as of serve's last budget read.
# TYPE gpuacct_budget_used_ratio gauge
gpuacct_budget_used_ratio{account="vision"} 0.3333333333333333
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
