package notifycmd

import (
	"context"

	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of one mailprog run.
const (
	// maxWait bounds --wait: slurmctld waits for its MailProg.
	maxWait = time.Minute
	// maxStdin bounds the body read from stdin (Slurm writes none).
	maxStdin = 64 << 10
	// stdinWait bounds the wait for stdin's end.
	stdinWait = time.Second
)

// MailProgCommand is `gpuacct mailprog`: Slurm's MailProg (slurm.conf
// MailProg= a wrapper that runs it, docs/notify.md).
func MailProgCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "mailprog",
		Usage: "Slurm's MailProg: send Slurm's job mail with the job's GPU summary appended",
		UsageText: `gpuacct mailprog -s SUBJECT RECIPIENT [--wait 10s]

slurmctld runs its MailProg as 'MailProg -s SUBJECT RECIPIENT' with the job
in SLURM_JOB_* variables. This sends Slurm's subject to Slurm's recipient
(a user name goes to the user's address, as the notifier's mails do)
through notify.mail; for an Ended or Failed mail it appends the job's
GPUs, GPU-hours, utilization, idle share and energy from the ledger,
waiting up to --wait for the job's end to arrive there. A ledger that
does not answer in time leaves Slurm's plain message, sent all the same.
The mail is recorded in the outbox (rule jobend) through the writer's
request queue; one the mail server refused is queued there and sent
again by gpuacct serve.

Examples:
   gpuacct mailprog -s "Slurm Job_id=42 Name=train Ended, Run time 01:00:00, COMPLETED, ExitCode 0" alice`,
		Flags: append(cliwire.LedgerFlags(),
			&cli.StringFlag{Name: "s", Usage: "the subject (Slurm's)"},
			&cli.DurationFlag{Name: "wait", Usage: "the longest wait for the job's record in the ledger", Value: 10 * time.Second},
			&cli.StringFlag{Name: "requests", Usage: "request directory (report.requests); records wait in its notify/", EnvVars: []string{"GPUSUITE_REQUESTS"}},
		),
		Action: func(c *cli.Context) error {
			const title = "mailprog"
			subject, wait := c.String("s"), c.Duration("wait")
			switch {
			case !c.IsSet("s"):
				return cliwire.Usagef("%s: give -s SUBJECT RECIPIENT, as slurmctld does", title)
			case c.NArg() != 1 || strings.TrimSpace(c.Args().First()) == "":
				return cliwire.Usagef("%s: give one RECIPIENT after -s SUBJECT, got %d arguments", title, c.NArg())
			case wait < 0 || wait > maxWait:
				return cliwire.Usagef("%s: --wait %s is outside 0s..%s", title, wait, maxWait)
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			if c.IsSet("requests") {
				e.cfg.Report.Requests = c.String("requests")
			}
			n, err := e.notifier(nil, d, nil)
			if err != nil {
				return err
			}
			m := notify.ParseSlurmMail(subject, c.Args().First(), readStdin(d.Stdin), d.Getenv)
			summary := e.summary(c.Context, d, n, m, wait)
			msg, sendErr := n.SendSlurmMail(c.Context, m, summary, d.Now())
			rec := &requests.Message{Key: msg.Key, Recipient: msg.Recipient, Language: msg.Language, Cluster: msg.Cluster, Job: msg.Job,
				Restart: msg.Restart, User: msg.User, Subject: msg.Subject, Body: msg.Body}
			if sendErr != nil {
				rec.Error = sendErr.Error()
				fmt.Fprintf(d.Stderr, "%s: mail to %q not sent (%v); queued for gpuacct serve to send again\n", title, m.To, sendErr)
			}
			euid, name := d.Caller()
			r := &requests.Request{Action: requests.NotifyRecord, Message: rec, Cluster: e.cfg.Cluster.Name, By: name, UID: euid, Time: e.now.UTC()}
			r.Host, _ = os.Hostname()
			svc, err := requests.ServiceUID(e.cfg.Ingest.ServiceUser)
			if err == nil {
				_, err = e.fileRequest(r, euid, svc)
			}
			if err != nil {
				if sendErr != nil {
					return fmt.Errorf("%s: mail to %q not sent (%v), and not queued: %w", title, m.To, sendErr, err)
				}
				// Sent: only the outbox's record is missing.
				fmt.Fprintf(d.Stderr, "%s: mail sent, its record not kept: %v\n", title, err)
			}
			return nil
		},
	}
}

// summary is m's summary from the ledger, "" when the ledger has none
// or does not answer within wait: the goroutine's ledger may hang on a
// lock, Slurm's mail goes without it.
func (e *env) summary(ctx context.Context, d Deps, n *notify.Notifier, m notify.SlurmMail, wait time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := store.Open(ctx, store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL, ReadOnly: true, BusyTimeout: wait})
		if err != nil {
			done <- result{err: err}
			return
		}
		defer st.Close()
		s, err := n.JobEndSummary(ctx, st, m, d.Now)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			fmt.Fprintf(d.Stderr, "mailprog: job %d: no GPU summary: %v\n", m.Job, r.err)
		}
		return r.s
	case <-ctx.Done():
		fmt.Fprintf(d.Stderr, "mailprog: job %d: no GPU summary: the ledger did not answer within %s\n", m.Job, wait)
		return ""
	}
}

// readStdin is the body on r when it is a pipe or a file (Slurm gives
// /dev/null, a terminal gives nothing), bounded in bytes and time.
func readStdin(r io.Reader) string {
	f, ok := r.(*os.File)
	if r == nil || ok && !pipeOrFile(f) {
		return ""
	}
	done := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, maxStdin))
		done <- string(b)
	}()
	t := time.NewTimer(stdinWait)
	defer t.Stop()
	select {
	case s := <-done:
		return s
	case <-t.C:
		return ""
	}
}

func pipeOrFile(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && (fi.Mode().IsRegular() || fi.Mode()&os.ModeNamedPipe != 0)
}

// fileRequest files r in the writer's queue (made first, owned by svc,
// when euid is root or the service user svc) and returns its path.
func (e *env) fileRequest(r *requests.Request, euid, svc int) (string, error) {
	dir := e.cfg.Report.Requests
	if euid == 0 || euid == svc {
		if err := requests.MakeQueues(dir, svc); err != nil {
			return "", err
		}
	}
	return requests.Submit(dir, r)
}
