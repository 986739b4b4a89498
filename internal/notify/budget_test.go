package notify

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/config"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

// budgetAt is a BudgetSource over a month budget of 100 GPU-hours for
// vision whose usage in the month is what used says at the time asked.
func budgetAt(t *testing.T, used func(now time.Time) []budget.Day) BudgetSource {
	t.Helper()
	bs, err := budget.Parse([]budget.Entry{{Account: "vision", Period: "month", Amount: 100}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(_ context.Context, now time.Time) ([]budget.Burndown, error) {
		p := bs[0].Period(now, time.UTC, time.January)
		bd := budget.Burn(bs[0], p, now, used(now))
		bd.Users = []string{"alice", "bob"}
		return []budget.Burndown{bd}, nil
	}
}

// TestBudgetRuleWarnsOnce: a threshold crossed twice in a period warns
// the team's lead and members once, through a real SMTP server; the next
// period warns again, of the highest threshold crossed and of the run-out.
func TestBudgetRuleWarnsOnce(t *testing.T) {
	sink := smtpsink.Shared(t)
	st, _ := ledger(t)
	march := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	april := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	// 55 on 2 March, taken back to 45 (a job moved to another account)
	// on the 12th, 60 from the 20th; 90 on 1 April
	used := func(now time.Time) []budget.Day {
		switch {
		case !now.Before(april):
			return []budget.Day{{Start: april, Used: 90}}
		case now.Day() >= 20:
			return []budget.Day{{Start: march, Used: 60}}
		case now.Day() >= 12:
			return []budget.Day{{Start: march, Used: 45}}
		}
		return []budget.Day{{Start: march, Used: 55}}
	}
	s := stamp()
	cfg := testConfig(t, sink.Addr, s)
	cfg.Idle.Enabled = false
	cfg.Digest.Leads = map[string][]string{"vision": {"lead"}}
	cfg.Languages = map[string]string{"bob": "ja"}
	n, err := New(cfg, st, Options{Budgets: budgetAt(t, used), Budget: config.Default().Budget})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  time.Time
		want Result
	}{
		{time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), Result{Found: 3, Added: 3, Sent: 3}},
		{time.Date(2026, 3, 12, 0, 0, 0, 0, time.UTC), Result{}},
		// 50 % crossed again: decided again, kept once
		{time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC), Result{Found: 3}},
		// April: 80 % (not 50 % too) and the run-out, to each
		{time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC), Result{Found: 6, Added: 6, Sent: 6}},
	} {
		res, err := n.Pass(context.Background(), tc.now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, res); diff != "" {
			t.Errorf("pass at %s (-want +got):\n%s", tc.now.Format("2006-01-02"), diff)
		}
	}
	want := map[string][]string{
		"lead":  {"[gpusuite] budget vision, 2026-03: 55 % used", "[gpusuite] budget vision, 2026-04: 90 % used", "[gpusuite] budget vision, 2026-04: runs out on 2026-04-02 at this pace"},
		"alice": {"[gpusuite] budget vision, 2026-03: 55 % used", "[gpusuite] budget vision, 2026-04: 90 % used", "[gpusuite] budget vision, 2026-04: runs out on 2026-04-02 at this pace"},
		"bob":   {"[gpusuite] 予算 vision (2026-03): 55 % 使用", "[gpusuite] 予算 vision (2026-04): 90 % 使用", "[gpusuite] 予算 vision (2026-04): このペースでは 2026-04-02 に使い切ります"},
	}
	for user, subjects := range want {
		msgs := sink.To(t, user+"-"+s+"@example.org", len(subjects))
		var got []string
		for _, m := range msgs {
			got = append(got, m.Subject)
		}
		if diff := cmp.Diff(subjects, got); diff != "" {
			t.Errorf("%s's mail (-want +got):\n%s", user, diff)
		}
	}
}

// TestBudgetGoldenMessages: the budget warnings in each language.
func TestBudgetGoldenMessages(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := budget.Parse([]budget.Entry{{Account: "vision", Period: "quarter", Amount: 900}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, tokyo)
	p := bs[0].Period(now, tokyo, time.January)
	var days []budget.Day
	for d := p.Start; d.Before(now); d = d.AddDate(0, 0, 1) {
		days = append(days, budget.Day{Start: d, Used: 24})
	}
	bd := budget.Burn(bs[0], p, now, days)
	ws := budget.Crossed(bd, config.Default().Budget.Warn, true)
	if len(ws) != 3 || !ws[2].RunOut {
		t.Fatalf("warnings %+v, want 50 %%, 80 %% and the run-out", ws)
	}
	for _, lang := range config.NotifyLanguages {
		for name, w := range map[string]budget.Warning{"budget": ws[1], "budget-runout": ws[2]} {
			t.Run(name+"."+lang, func(t *testing.T) {
				subject, body := renderBudget(bd, w, "alice", lang, tokyo)
				checkGolden(t, name+"."+lang+".golden", "Subject: "+subject+"\n\n"+body)
			})
		}
	}
}
