// Package notify is the notifier of the one writer (gpuacct serve, and
// gpuacct notify --once from cron): rules evaluated over the ledger
// decide messages, each kept in the ledger under a fire-once key before it
// is attempted (invariant 11), then delivered through internal/notify/deliver
// with retries and backoff, rate-limited per recipient, every outcome
// recorded on the message (docs/notify.md).
//
// Files: notify.go (Notifier, a pass), idle.go (the idle-GPU rule),
// message.go (the messages, English and Japanese), outbox.go (delivery,
// backoff, rate limit), recipients.go (users' mail addresses),
// metrics.go (counters per rule, channel and outcome), list.go (gpuacct
// notify list's table), jobend.go (Slurm's job mail with the job's GPU
// summary: gpuacct mailprog), cancel.go (the idle rule's final warning
// and cancel), digest.go (each user's weekly digest), digestlead.go (each
// team's, to its leads), digestadmin.go (the cluster's, to its admins),
// advice.go (the advice in each user's digest).
package notify

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/notify/deliver"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/store"
)

// Rules are the rules this notifier knows, by name.
var Rules = []string{RuleIdle, RuleDigest}

// Rule names: the idle-GPU rule, the job-end mail (gpuacct mailprog),
// the weekly digests; all stands for every rule in a user's opt-out.
const (
	RuleIdle   = "idle"
	RuleJobEnd = "jobend"
	RuleDigest = "digest"
	RuleAll    = "all"
)

// OptOutRules are the rules a user may opt out of (gpuacct notify off).
var OptOutRules = []string{RuleIdle, RuleDigest, RuleJobEnd, RuleAll}

// optedOut says whether user opted out of rule, by name or by all.
func optedOut(ctx context.Context, st *store.Ledger, user, rule string) (bool, error) {
	rules, err := st.NotifyOptOuts(ctx, user)
	if err != nil {
		return false, err
	}
	return slices.Contains(rules, rule) || slices.Contains(rules, RuleAll), nil
}

// Channels of a message.
const (
	ChannelMail    = "mail"
	ChannelWebhook = "webhook"
)

// Options is what a Notifier takes besides its section of the config.
type Options struct {
	// Loc is the zone of times in messages (report.tz).
	Loc *time.Location
	// IdleThreshold is the utilization (percent) under which the agents
	// call a sample idle (agent.idle_threshold), for the messages.
	IdleThreshold float64
	Log           *slog.Logger
	// TLS is the SMTP client's TLS configuration; nil: the system's.
	TLS *tls.Config
	// Metrics may be nil.
	Metrics *Metrics
	// TeamsFile is the team mapping (report.teams) the leads' digests
	// group by; "": teams are Slurm accounts.
	TeamsFile string
	// Budgets, when set, runs the budget rule (budget.go) with Budget's
	// thresholds.
	Budgets BudgetSource
	Budget  config.Budget
}

// Notifier evaluates the rules and delivers their messages over one
// ledger, which it writes as (or inside) the one writer.
type Notifier struct {
	cfg   config.Notify
	st    *store.Ledger
	loc   *time.Location
	log   *slog.Logger
	thr   float64
	smtp  deliver.SMTP
	hooks map[string]deliver.Webhook
	addrs addresses
	m     *Metrics
	teams *teams.Mapping
	last  time.Time
	// digested is the week whose digests this notifier kept: the keys
	// make a second keeping harmless, this spares the week's read.
	digested  string
	budgets   BudgetSource
	budgetCfg config.Budget
}

// New makes a Notifier over st, reading the SMTP password file and the
// addresses file once.
func New(cfg config.Notify, st *store.Ledger, o Options) (*Notifier, error) {
	n := &Notifier{cfg: cfg, st: st, loc: o.Loc, log: o.Log, thr: o.IdleThreshold, m: o.Metrics, hooks: map[string]deliver.Webhook{},
		budgets: o.Budgets, budgetCfg: o.Budget}
	if n.loc == nil {
		n.loc = time.UTC
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.smtp = deliver.SMTP{Host: cfg.Mail.Host, Port: cfg.Mail.Port, StartTLS: cfg.Mail.StartTLS, User: cfg.Mail.User, From: cfg.Mail.From,
		Timeout: cfg.Mail.Timeout.Duration, TLS: o.TLS}
	if cfg.Mail.PasswordFile != "" {
		pw, err := config.ReadFile(cfg.Mail.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("read notify.mail.password_file %q: %w", cfg.Mail.PasswordFile, err)
		}
		n.smtp.Password = strings.TrimRight(string(pw), "\r\n")
	}
	var err error
	if n.teams, err = teams.Load(o.TeamsFile); err != nil {
		return nil, err
	}
	addrs, err := readAddresses(cfg.Mail.AddressesFile)
	if err != nil {
		return nil, err
	}
	n.addrs = addrs
	for name, w := range cfg.Webhooks {
		n.hooks[name] = deliver.Webhook{URL: w.URL, Format: w.Format, Timeout: w.Timeout.Duration}
	}
	return n, nil
}

// Result is what one pass did.
type Result struct {
	// Jobs is how many running job runs the rules looked at; Found the
	// messages they decided, Added those new to the ledger (the rest were
	// decided before).
	Jobs, Found, Added int
	// Sent, Retry and Failed count this pass's deliveries: delivered,
	// left queued for another try, given up.
	Sent, Retry, Failed int
}

// Pass evaluates the rules at now and delivers what is due.
func (n *Notifier) Pass(ctx context.Context, now time.Time) (Result, error) {
	res, err := n.Evaluate(ctx, now)
	if err != nil {
		return res, err
	}
	if n.cfg.DryRun {
		return res, nil
	}
	if err := n.Deliver(ctx, now, &res); err != nil {
		return res, err
	}
	if n.m != nil {
		q, err := n.st.NotifyQueueState(ctx)
		if err != nil {
			return res, err
		}
		n.m.queued(q, now)
	}
	return res, nil
}

// Due says whether a pass is due at now (notify.interval after the last
// Tick), and if so starts the next interval: serve asks after each ingest
// pass.
func (n *Notifier) Due(now time.Time) bool {
	if !n.last.IsZero() && now.Sub(n.last) < n.cfg.Interval.Duration {
		return false
	}
	n.last = now
	return true
}

// RunDue runs a pass when one is due at now (Due), logging its outcome:
// what gpuacct serve calls after each ingest pass. A failed pass is
// logged and tried again at the next interval; its messages stay kept.
func (n *Notifier) RunDue(ctx context.Context, now time.Time) {
	if !n.Due(now) {
		return
	}
	res, err := n.Pass(ctx, now)
	switch {
	case err != nil:
		n.log.Error("notify pass failed; trying again next interval", "err", err)
	case res.Added+res.Sent+res.Retry+res.Failed > 0:
		n.log.Info("notify pass", "jobs", res.Jobs, "decided", res.Found, "new", res.Added, "sent", res.Sent, "retry", res.Retry, "failed", res.Failed)
	}
}

// Evaluate runs the rules at now and keeps the messages they decide
// (with notify.dry_run, logs them and keeps nothing).
func (n *Notifier) Evaluate(ctx context.Context, now time.Time) (Result, error) {
	var res Result
	var msgs []store.NotifyMessage
	if n.cfg.Idle.Enabled {
		idle, jobs, err := n.idleMessages(ctx, now, "")
		res.Jobs = jobs
		if err != nil {
			return res, err
		}
		msgs = idle
	}
	digestWeek := ""
	if n.digestDue(now) {
		digests, err := n.digestMessages(ctx, now, "")
		if err != nil {
			return res, err
		}
		msgs = append(msgs, digests...)
		_, _, digestWeek = week(now, n.loc)
	}
	if n.budgets != nil {
		warnings, err := n.budgetMessages(ctx, now)
		if err != nil {
			return res, err
		}
		msgs = append(msgs, warnings...)
	}
	res.Found = len(msgs)
	if len(msgs) == 0 {
		if digestWeek != "" {
			n.digested = digestWeek
		}
		return res, nil
	}
	if n.cfg.DryRun {
		for _, m := range msgs {
			n.log.Info("notify dry run: would send", "rule", m.Rule, "key", m.Key, "to", m.Recipient, "via", m.Channel, "subject", m.Subject)
		}
		if digestWeek != "" {
			n.digested = digestWeek // logged once a week, not each pass
		}
		return res, nil
	}
	b, err := n.st.Begin(ctx, now)
	if err != nil {
		return res, fmt.Errorf("keep messages: %w", err)
	}
	for _, m := range msgs {
		_, added, err := b.EnqueueNotify(m)
		if err != nil {
			b.Rollback()
			return res, err
		}
		if added {
			res.Added++
			n.m.decided(m.Rule, m.Channel)
			n.log.Info("notify: message decided", "rule", m.Rule, "key", m.Key, "to", m.Recipient, "via", m.Channel)
		}
	}
	if err := b.Commit(); err != nil {
		return res, fmt.Errorf("keep messages: %w", err)
	}
	if digestWeek != "" {
		n.digested = digestWeek
	}
	return res, nil
}

// Preview is the messages rule would decide at now, for user ("" for
// every user), kept nowhere: gpuacct notify preview.
func (n *Notifier) Preview(ctx context.Context, rule string, now time.Time, user string) ([]store.NotifyMessage, error) {
	switch rule {
	case RuleIdle:
		msgs, _, err := n.idleMessages(ctx, now, user)
		return msgs, err
	case RuleDigest:
		return n.digestMessages(ctx, now, user)
	}
	return nil, fmt.Errorf("no rule %q (rules: %s)", rule, strings.Join(Rules, ", "))
}

// language is the language of messages to user.
func (n *Notifier) language(user string) string {
	if l, ok := n.cfg.Languages[user]; ok {
		return l
	}
	return n.cfg.Language
}
