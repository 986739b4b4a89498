package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/store"
)

// RuleBudget is the budget rule: a budget's team is warned when its use
// crosses a threshold of budget.warn, and when the last 7 days' pace runs
// it out before its period ends (docs/budgets.md). Users opt out of it
// with --rule all: the rules a user names are the ones they receive for
// their own jobs.
const RuleBudget = "budget"

// BudgetSource reads each configured budget's burn-down at now, its
// Users filled (report.Ledger.Burns): gpuacct serve passes one over its
// reading handle.
type BudgetSource func(ctx context.Context, now time.Time) ([]budget.Burndown, error)

// budgetMessages are the budget rule's messages at now: for each budget,
// the highest threshold crossed (a lower one crossed later, after usage
// moved away, is still a new key) and the run-out warning, each to the
// team's leads (notify.digest.leads) and members (the budget's user, or
// whoever used it in the period). Keys hold the period and threshold:
// each is sent once per period whatever the passes.
func (n *Notifier) budgetMessages(ctx context.Context, now time.Time) ([]store.NotifyMessage, error) {
	bds, err := n.budgets(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("budget rule: %w", err)
	}
	var out []store.NotifyMessage
	// a lead or member of several budgets: their opt-outs read once
	offs := map[string]bool{}
	for _, bd := range bds {
		ws := budget.Crossed(bd, n.budgetCfg.Warn, n.budgetCfg.WarnRunOut)
		// the highest percent only: a budget first seen at 85 % warns of
		// 80 %, not of 50 % too
		var due []budget.Warning
		for i, w := range ws {
			if w.RunOut || i+1 == len(ws) || ws[i+1].RunOut {
				due = append(due, w)
			}
		}
		if len(due) == 0 {
			continue
		}
		for _, to := range n.budgetRecipients(bd) {
			off, read := offs[to]
			if !read {
				if off, err = optedOut(ctx, n.st, to, RuleBudget); err != nil {
					return nil, err
				}
				offs[to] = off
			}
			if off {
				continue
			}
			lang := n.language(to)
			for _, w := range due {
				subject, body := renderBudget(bd, w, to, lang, n.loc)
				out = append(out, store.NotifyMessage{Key: w.Key + ":to:" + to, Rule: RuleBudget, Recipient: n.address(to),
					Channel: ChannelMail, Language: lang, User: to, Subject: subject, Body: body, Created: now})
			}
		}
	}
	return out, nil
}

// budgetRecipients are the team's leads, then its members, once each.
func (n *Notifier) budgetRecipients(bd budget.Burndown) []string {
	var out []string
	add := func(users ...string) {
		for _, u := range users {
			if u != "" && !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	add(n.cfg.Digest.Leads[n.teams.Team(bd.Budget.Account, "")]...)
	if bd.Budget.User != "" {
		add(bd.Budget.User)
	} else {
		add(bd.Users...)
	}
	return out
}

// budgetText is the budget warning in one language.
type budgetText struct {
	subjectPct, subjectRunOut, hello, introPct, introRunOut string
	budget, used, left, elapsed, pace, runOut, noRunOut     string
	units                                                   map[budget.Unit]string
	footer                                                  string
}

var budgetTexts = map[string]budgetText{
	"en": {
		subjectPct:    "[gpusuite] budget %[1]s, %[2]s: %.0[3]f %% used",
		subjectRunOut: "[gpusuite] budget %[1]s, %[2]s: runs out on %[3]s at this pace",
		hello:         "Hello %s,\n\n",
		introPct:      "the GPU budget of %[1]s for %[2]s (%[3]s to %[4]s) has reached %[5]d %%:\n\n",
		introRunOut:   "at the last 7 days' pace the GPU budget of %[1]s for %[2]s (%[3]s to %[4]s) runs out before the period ends:\n\n",
		budget:        "  budget:    %9.2f %s\n",
		used:          "  used:      %9.2f %s (%.1f %%)\n",
		left:          "  left:      %9.2f %s\n",
		elapsed:       "  elapsed:   %.1f %% of the period\n",
		pace:          "  pace:      %9.2f %s a day (last 7 days)\n",
		runOut:        "  runs out:  %s\n",
		noRunOut:      "  runs out:  not before the period ends\n",
		units:         map[budget.Unit]string{budget.GPUHours: "GPU-h", budget.Billing: "billing-h"},
		footer: "\nThis is a warning: gpusuite stops no job. Slurm stops jobs only where the account has a GrpTRESMins limit.\n" +
			"Details: gpuacct report budget --account %s\n" +
			"To get no more of these mails:\n    gpuacct notify off --rule all\n\n-- gpusuite\n",
	},
	"ja": {
		subjectPct:    "[gpusuite] 予算 %[1]s (%[2]s): %.0[3]f %% 使用",
		subjectRunOut: "[gpusuite] 予算 %[1]s (%[2]s): このペースでは %[3]s に使い切ります",
		hello:         "%s さん\n\n",
		introPct:      "%[1]s の %[2]s (%[3]s から %[4]s) の GPU 予算が %[5]d %% に達しました:\n\n",
		introRunOut:   "直近 7 日のペースでは、%[1]s の %[2]s (%[3]s から %[4]s) の GPU 予算は期間の終わりより前に尽きます:\n\n",
		budget:        "  予算:      %9.2f %s\n",
		used:          "  使用:      %9.2f %s (%.1f %%)\n",
		left:          "  残り:      %9.2f %s\n",
		elapsed:       "  経過:      期間の %.1f %%\n",
		pace:          "  ペース:    1 日 %9.2f %s (直近 7 日)\n",
		runOut:        "  使い切り:  %s\n",
		noRunOut:      "  使い切り:  期間内にはなし\n",
		units:         map[budget.Unit]string{budget.GPUHours: "GPU 時間", budget.Billing: "課金単位時間"},
		footer: "\nこれは警告です。gpusuite はジョブを止めません。ジョブを止めるのは、アカウントに GrpTRESMins の上限がある場合の Slurm だけです。\n" +
			"詳細: gpuacct report budget --account %s\n" +
			"このメールが不要なら:\n    gpuacct notify off --rule all\n\n-- gpusuite\n",
	},
}

// renderBudget is warning w of bd for user in lang, dates in loc.
func renderBudget(bd budget.Burndown, w budget.Warning, user, lang string, loc *time.Location) (subject, body string) {
	tx, _ := textIn(budgetTexts, lang)
	name, p := bd.Budget.Name(), bd.Period
	day := func(t time.Time) string { return t.In(loc).Format("2006-01-02") }
	if w.RunOut {
		subject = fmt.Sprintf(tx.subjectRunOut, name, p.Label, day(bd.RunOut))
	} else {
		subject = fmt.Sprintf(tx.subjectPct, name, p.Label, 100*bd.Ratio)
	}
	var b strings.Builder
	fmt.Fprintf(&b, tx.hello, user)
	last := day(p.End.Add(-time.Second))
	if w.RunOut {
		fmt.Fprintf(&b, tx.introRunOut, name, p.Label, day(p.Start), last)
	} else {
		fmt.Fprintf(&b, tx.introPct, name, p.Label, day(p.Start), last, w.Percent)
	}
	unit := tx.units[bd.Budget.Unit]
	fmt.Fprintf(&b, tx.budget, bd.Budget.Amount, unit)
	fmt.Fprintf(&b, tx.used, bd.Used, unit, 100*bd.Ratio)
	fmt.Fprintf(&b, tx.left, bd.Left, unit)
	fmt.Fprintf(&b, tx.elapsed, 100*bd.Elapsed)
	fmt.Fprintf(&b, tx.pace, bd.Pace, unit)
	if bd.RunsOut() {
		fmt.Fprintf(&b, tx.runOut, day(bd.RunOut))
	} else {
		b.WriteString(tx.noRunOut)
	}
	fmt.Fprintf(&b, tx.footer, bd.Budget.Account)
	return subject, b.String()
}
