package notifycmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// optOutCommand is `gpuacct notify off` (off) or `gpuacct notify on`: the
// caller's opt-out of a rule, filed through the writer's request queue.
func optOutCommand(d Deps, off bool) *cli.Command {
	name, usage, example := "on", "get RULE's messages again (take back 'gpuacct notify off')", "gpuacct notify on --rule idle"
	if off {
		name, usage, example = "off", "get no more of RULE's messages (all: none of any rule)", "gpuacct notify off --rule digest"
	}
	rules := strings.Join(notify.OptOutRules, ", ")
	return &cli.Command{
		Name:  name,
		Usage: usage,
		UsageText: fmt.Sprintf(`gpuacct notify %s --rule RULE

RULE is one of %s. The choice is yours alone: it is kept in the
ledger by its one writer, at once when no 'gpuacct serve' runs and you
are root or the service user, else on serve's next pass.

Examples:
   %s`, name, rules, example),
		Flags: append(cliwire.LedgerFlags(),
			&cli.StringFlag{Name: "rule", Usage: "the rule: " + rules},
			&cli.StringFlag{Name: "requests", Usage: "request directory (report.requests); opt-outs wait in its notify/", EnvVars: []string{"GPUSUITE_REQUESTS"}},
		),
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			title := "notify " + name
			rule := c.String("rule")
			if rule == "" {
				return cliwire.Usagef("%s: give --rule RULE (%s)", title, rules)
			}
			if err := requests.CheckNotifyRule(rule); err != nil {
				return cliwire.Usagef("%s: %v", title, err)
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			if c.IsSet("requests") {
				e.cfg.Report.Requests = c.String("requests")
			}
			action := requests.NotifyOn
			if off {
				action = requests.NotifyOff
			}
			return e.fileOptOut(c.Context, d, action, rule)
		}),
	}
}

// fileOptOut files the caller's request and says what became of it:
// queued for gpuacct serve, or what the writer decided.
func (e *env) fileOptOut(ctx context.Context, d Deps, action, rule string) error {
	euid, name := d.Caller()
	r := &requests.Request{Action: action, Rule: rule, Cluster: e.cfg.Cluster.Name, By: name, UID: euid, Time: e.now.UTC()}
	r.Host, _ = os.Hostname()
	dir := e.cfg.Report.Requests
	svc, err := requests.ServiceUID(e.cfg.Ingest.ServiceUser)
	if err != nil {
		return fmt.Errorf("%s: %w", e.title, err)
	}
	trusted := func(uid int) bool { return uid == 0 || uid == svc }
	writer := trusted(euid)
	path, err := e.fileRequest(r, euid, svc)
	if err != nil {
		return fmt.Errorf("%s: %w", e.title, err)
	}
	queued := func() error {
		_, err := fmt.Fprintf(d.Stdout, "%s: request %s queued; gpuacct serve applies it on its next pass (ingest.interval)\n", e.title, path)
		return err
	}
	if !writer {
		return queued()
	}
	st, err := e.writer(ctx)
	if errors.Is(err, store.ErrLocked) {
		return queued()
	}
	if err != nil {
		return fmt.Errorf("%s: request %s is queued, but the ledger cannot be written: %w", e.title, path, err)
	}
	defer st.Close()
	host, _ := os.Hostname()
	if _, err := requests.Apply(ctx, st, requests.Options{Dir: dir, Now: e.now, Host: host, Tag: e.cfg.Report.IgnoreTag,
		Cluster: e.cfg.Cluster.Name, Trusted: trusted, UserName: d.LookupUser, LiveDir: e.cfg.Board.LiveDir}); err != nil {
		return fmt.Errorf("%s: request %s is queued, but applying it failed: %w", e.title, path, err)
	}
	out, err := requests.NotifyOutcome(dir, r.ID, euid)
	if err != nil {
		return fmt.Errorf("%s: %w", e.title, err)
	}
	if out.Error != "" {
		return fmt.Errorf("%s: %s", e.title, strings.TrimPrefix(out.Error, "refused: "))
	}
	what := rule + "'s messages"
	if rule == notify.RuleAll {
		what = "messages of any rule"
	}
	if action == requests.NotifyOff {
		_, err = fmt.Fprintf(d.Stdout, "%s gets no more of %s\n", out.By, what)
	} else {
		_, err = fmt.Fprintf(d.Stdout, "%s gets %s again\n", out.By, what)
	}
	return err
}
