// Package notifycmd is the command line of gpuacct notify: one notifier
// pass for cron (--once), a test message, the messages kept, and a
// rule's messages as they would go (internal/notify, docs/notify.md).
//
// Files: notifycmd.go (Deps, gpuacct notify, --once, test, list,
// preview), budget.go (--once's budget rule), optout.go (notify off and
// on), mailprog.go (gpuacct mailprog, Slurm's MailProg).
package notifycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/logging"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// Deps is what the commands take from the process; tests set each.
type Deps struct {
	// Stdin is gpuacct mailprog's body (Slurm writes none).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Now            func() time.Time
	// Caller is who asks, by effective uid and user name: only root and
	// the service user see other users' messages.
	Caller func() (uid int, name string)
	// LookupUser names a uid (the owner of an opt-out request); nil: the
	// system's user database.
	LookupUser func(uid int) (string, error)
}

// System is Deps for the real process.
func System(stdout, stderr io.Writer, getenv func(string) string) Deps {
	return Deps{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv, Now: time.Now, Caller: caller}
}

// caller is the process's effective user.
func caller() (int, string) {
	uid := os.Geteuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return uid, u.Username
	}
	return uid, strconv.Itoa(uid)
}

// Command is `gpuacct notify`.
func Command(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "notify",
		Usage: "the notifier: tell job owners about idle GPUs by mail (and webhooks); --once runs one pass",
		UsageText: `gpuacct notify --once
gpuacct notify test --to ADDR
gpuacct notify list [--job ID] [--user U] [--format table|json]
gpuacct notify preview idle|digest [--user U]
gpuacct notify off|on --rule RULE

The notifier's rules ([notify] in the config) decide messages over the
ledger; each is kept in the ledger before it is sent, once per condition
and recipient, and retried until delivered or given up with the reason.
gpuacct serve runs it beside ingest when notify.enabled; --once runs one
pass (rules, then delivery) for cron, as the ledger's writer: it refuses
while gpuacct serve holds the ledger. See docs/notify.md.

Examples:
   gpuacct notify --once
   gpuacct notify test --to alice@example.org
   gpuacct notify list --job 4242
   gpuacct notify preview idle --user alice
   gpuacct notify off --rule idle`,
		Flags: append(cliwire.LedgerFlags(),
			&cli.BoolFlag{Name: "once", Usage: "evaluate the rules and deliver what is due, once, as the ledger's writer"},
			&cli.BoolFlag{Name: "dry-run", Usage: "log what the rules would send; keep and send nothing (notify.dry_run)"},
		),
		Action:      onceAction(d),
		Subcommands: []*cli.Command{testCommand(d), listCommand(d), previewCommand(d), optOutCommand(d, true), optOutCommand(d, false)},
	}
}

// env is the resolved configuration of one run.
type env struct {
	cfg   config.Config
	loc   *time.Location
	now   time.Time
	title string
}

// load reads the config and c's flags over it; a bad config is a usage
// error of one line naming the key (exit 2).
func load(c *cli.Context, d Deps, title string) (*env, error) {
	cfg, err := cliwire.LoadConfig(c, d.Getenv)
	if err != nil {
		return nil, cliwire.Usagef("%s: %v", title, err)
	}
	cliwire.SetLedger(c, &cfg.Store)
	if c.IsSet("dry-run") {
		cfg.Notify.DryRun = c.Bool("dry-run")
	}
	cfg.FollowLedger()
	loc, err := timespec.LoadLocation(cfg.Report.TZ)
	if err != nil {
		return nil, cliwire.Usagef("%s: %v", title, err)
	}
	return &env{cfg: cfg, loc: loc, now: d.Now(), title: title}, nil
}

// notifier is the notifier over st; budgets, when set, runs the budget
// rule (env.budgets).
func (e *env) notifier(st *store.Ledger, d Deps, budgets notify.BudgetSource) (*notify.Notifier, error) {
	n, err := notify.New(e.cfg.Notify, st, notify.Options{Loc: e.loc, IdleThreshold: e.cfg.Agent.IdleThreshold, TeamsFile: e.cfg.Report.Teams,
		Log: logging.New("gpuacct-notify", d.Stderr, slog.LevelInfo, d.Getenv), Budgets: budgets, Budget: e.cfg.Budget})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.title, err)
	}
	return n, nil
}

func (e *env) reader(ctx context.Context) (*store.Ledger, error) {
	st, err := store.Open(ctx, store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL, ReadOnly: true, BusyTimeout: e.cfg.Store.BusyTimeout.Duration})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.title, err)
	}
	return st, nil
}

// writer opens the ledger to write it; the error is store.Open's, so
// that a caller can tell store.ErrLocked.
func (e *env) writer(ctx context.Context) (*store.Ledger, error) {
	return store.Open(ctx, store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL, Journal: e.cfg.Store.JournalMode,
		BusyTimeout: e.cfg.Store.BusyTimeout.Duration})
}

func onceAction(d Deps) cli.ActionFunc {
	return func(c *cli.Context) error {
		const title = "notify"
		if c.Args().Present() {
			return cliwire.Usagef("%s: no command %q (commands: test, list, preview, off, on; see 'gpuacct notify --help')", title, c.Args().First())
		}
		if !c.Bool("once") {
			return cliwire.Usagef("%s: give --once, or a command: test, list, preview, off, on (see 'gpuacct notify --help')", title)
		}
		e, err := load(c, d, title)
		if err != nil {
			return err
		}
		st, err := e.writer(c.Context)
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("%s: another writer holds the ledger (gpuacct serve runs the notifier itself when notify.enabled): %w", title, err)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", title, err)
		}
		defer st.Close()
		// the budget rule as gpuacct serve runs it (docs/budgets.md)
		budgets, closeBudgets, err := e.budgets(c.Context)
		if err != nil {
			return err
		}
		defer closeBudgets()
		n, err := e.notifier(st, d, budgets)
		if err != nil {
			return err
		}
		res, err := n.Pass(c.Context, e.now)
		if err != nil {
			return fmt.Errorf("%s: %w", title, err)
		}
		_, err = fmt.Fprintf(d.Stdout, "%d running jobs looked at; %d messages decided, %d new; %d sent, %d to retry, %d given up\n",
			res.Jobs, res.Found, res.Added, res.Sent, res.Retry, res.Failed)
		return err
	}
}

func testCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:      "test",
		Usage:     "send one test message to ADDR through the configured mail server, at once, keeping nothing",
		UsageText: "gpuacct notify test --to ADDR\n\nExamples:\n   gpuacct notify test --to alice@example.org",
		Flags:     []cli.Flag{&cli.StringFlag{Name: "to", Usage: "the address to send to"}},
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			const title = "notify test"
			to := strings.TrimSpace(c.String("to"))
			if to == "" {
				return cliwire.Usagef("%s: give --to ADDR", title)
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			n, err := e.notifier(nil, d, nil)
			if err != nil {
				return err
			}
			if err := n.Test(c.Context, to, e.now); err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			_, err = fmt.Fprintf(d.Stdout, "sent a test message to %s through %s:%d\n", to, e.cfg.Notify.Mail.Host, e.cfg.Notify.Mail.Port)
			return err
		}),
	}
}

// trusted says whether the caller may see every user's messages: root
// and the service user.
func (e *env) trusted(d Deps) (bool, error) {
	euid, _ := d.Caller()
	if euid == 0 {
		return true, nil
	}
	svc, err := requests.ServiceUID(e.cfg.Ingest.ServiceUser)
	if err != nil {
		return false, fmt.Errorf("%s: %w", e.title, err)
	}
	return euid == svc, nil
}

// who is the user whose messages the caller may see: --user for root and
// the service user (every user when not given), else the caller.
func (e *env) who(c *cli.Context, d Deps) (string, error) {
	trusted, err := e.trusted(d)
	if err != nil {
		return "", err
	}
	asked := c.String("user")
	if asked == cliwire.Me {
		// "me" is the real uid's user, as wherever a command names users.
		lookup := d.LookupUser
		if lookup == nil {
			lookup = func(uid int) (string, error) { return cliwire.Caller(uid, user.LookupId) }
		}
		names, err := cliwire.ResolveMe([]string{asked}, func() (string, error) { return lookup(os.Getuid()) })
		if err != nil {
			return "", err
		}
		asked = names[0]
	}
	if trusted {
		return asked, nil
	}
	_, self := d.Caller()
	if asked != "" && asked != self {
		return "", fmt.Errorf("%s: only root and the service user see another user's messages", e.title)
	}
	return self, nil
}

func listCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the messages the notifier kept: who, what, when, via, delivered or why not",
		UsageText: `gpuacct notify list [--job ID] [--user U] [--limit N] [--format table|json]

Newest first. Root and the service user see every user's messages;
others see their own.

Examples:
   gpuacct notify list
   gpuacct notify list --job 4242 --format json`,
		Flags: append(cliwire.LedgerFlags(),
			&cli.Int64Flag{Name: "job", Usage: "the messages about this Slurm job id"},
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "the messages about this user's jobs"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many messages", Value: 100},
			&cli.StringFlag{Name: "format", Usage: "table, csv, tsv or json", Value: "table"},
		),
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			const title = "notify list"
			f, err := table.ParseFormat(c.String("format"))
			if err != nil {
				return cliwire.Usagef("%s: %v", title, err)
			}
			if l := c.Int("limit"); l < 1 || l > store.MaxNotifyList {
				return cliwire.Usagef("%s: --limit %d is outside 1..%d", title, l, store.MaxNotifyList)
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			q := store.NotifyQuery{Limit: c.Int("limit")}
			if q.User, err = e.who(c, d); err != nil {
				return err
			}
			if c.IsSet("job") {
				j := c.Int64("job")
				q.Job = &j
			}
			st, err := e.reader(c.Context)
			if err != nil {
				return err
			}
			msgs, err := st.NotifyMessages(c.Context, q)
			st.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			loc := e.loc
			return table.Write(d.Stdout, notify.ListTable(msgs), table.Options{Format: f,
				TimeFormat: func(t int64) string { return time.Unix(t, 0).In(loc).Format("2006-01-02 15:04") }})
		}),
	}
}

func previewCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "preview",
		Usage: "print the messages RULE would send now, sending and keeping nothing",
		UsageText: `gpuacct notify preview RULE [--user U]

RULE is idle or digest (the weekly digest of the week before). Root and
the service user may preview any user's messages; others their own.

Examples:
   gpuacct notify preview idle
   gpuacct notify preview idle --user alice`,
		Flags: append(cliwire.LedgerFlags(), &cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "only this user's messages"}),
		Action: func(c *cli.Context) error {
			const title = "notify preview"
			if c.NArg() != 1 {
				return cliwire.Usagef("%s: give one rule (%s; see 'gpuacct notify preview --help')", title, strings.Join(notify.Rules, ", "))
			}
			rule := c.Args().First()
			known := false
			for _, r := range notify.Rules {
				known = known || r == rule
			}
			if !known {
				return cliwire.Usagef("%s: no rule %q (rules: %s)", title, rule, strings.Join(notify.Rules, ", "))
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			u, err := e.who(c, d)
			if err != nil {
				return err
			}
			st, err := e.reader(c.Context)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := e.notifier(st, d, nil)
			if err != nil {
				return err
			}
			msgs, err := n.Preview(c.Context, rule, e.now, u)
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			if len(msgs) == 0 {
				_, err := fmt.Fprintf(d.Stdout, "rule %s would send nothing now\n", rule)
				return err
			}
			for i, m := range msgs {
				sep := ""
				if i > 0 {
					sep = "\n"
				}
				if _, err := fmt.Fprintf(d.Stdout, "%sTo: %s (%s, %s)\nSubject: %s\n\n%s", sep, m.Recipient, m.Channel, m.Language, m.Subject, m.Body); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
