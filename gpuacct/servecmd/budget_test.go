package servecmd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
)

// budgetServe is a serve config over a ledger where vision/alice held 1
// GPU for 24 hours, ending 12 hours before today's midnight (UTC), with
// budgets.
func budgetServe(t *testing.T, entries []budget.Entry) *Main {
	t.Helper()
	now := time.Now().UTC()
	midnight := now.Truncate(24 * time.Hour)
	loc := reportfixture.BuildLedger(t, []reportfixture.Job{{ID: 1, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1,
		Start: midnight.Add(-36 * time.Hour).Unix(), End: midnight.Add(-12 * time.Hour).Unix()}}, now)
	l := ledgerdb.Ledger{Path: loc}
	if strings.HasPrefix(loc, "postgres") {
		l = ledgerdb.Ledger{URL: loc}
	}
	cfg := serveConfig(t, l)
	cfg.Report.TZ = "UTC"
	cfg.Budget.Entry = entries
	return &Main{Getenv: func(string) string { return "" }, Config: cfg, Addr: make(chan string, 1)}
}

// TestServeBudgetMetrics: serve's /metrics has each account budget's
// share used and days left: 24 of 48 GPU-hours over the three days to
// today.
func TestServeBudgetMetrics(t *testing.T) {
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	m := budgetServe(t, []budget.Entry{{Account: "vision", Period: "range", Amount: 48,
		From: midnight.AddDate(0, 0, -2).Format("2006-01-02"), To: midnight.Format("2006-01-02")}})
	var logs logs.Buffer
	m.Stderr = &logs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startServe(ctx, t, m, &logs)
	waitFor(t, "the budget's gauges after a pass", func() bool {
		body, _ := get("http://" + addr + "/metrics")
		return metric(body, `gpuacct_budget_used_ratio{account="vision"}`) != ""
	})
	body, _ := get("http://" + addr + "/metrics")
	if got := metric(body, `gpuacct_budget_used_ratio{account="vision"}`); got != "0.5" {
		t.Errorf("used ratio %q, want 0.5; log %s", got, logs.String())
	}
	if got := metric(body, `gpuacct_budget_days_left{account="vision"}`); got == "" || got == "0" {
		t.Errorf("days left %q, want the days to the range's end", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestServeRefusesBadBudget: a budget whose account the ledger does not
// know stops serve at start with one line naming the entry.
func TestServeRefusesBadBudget(t *testing.T) {
	m := budgetServe(t, []budget.Entry{{Account: "ghost", Period: "month", Amount: 10}})
	var logs logs.Buffer
	m.Stderr = &logs
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	t.Cleanup(func() { m.Close() })
	select {
	case err := <-done:
		want := `budgets: budget.entry[0] (ghost): account "ghost" is unknown (neither in the ledger nor in the teams file)`
		if err == nil || err.Error() != want {
			t.Errorf("serve: %v, want %q", err, want)
		}
		if ue := (*cliwire.UsageError)(nil); !errors.As(err, &ue) {
			t.Errorf("serve: %v is not a usage error (exit 2)", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("serve still running after 90 s")
	}
}
