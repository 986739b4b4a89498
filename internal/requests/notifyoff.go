package requests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/store"
)

// CheckNotifyRule says, in one line, why rule cannot be opted out of.
func CheckNotifyRule(rule string) error {
	if !slices.Contains(notify.OptOutRules, rule) {
		return fmt.Errorf("--rule %q is not a rule (rules: %s)", rule, strings.Join(notify.OptOutRules, ", "))
	}
	return nil
}

// NotifyKind is the kind of `gpuacct notify off` and `on`: a user's
// opt-out of one of the notifier's rules, in the notify queue
// (NotifyDir), which anyone may file into as into the note queue. The
// user opted out is the file's owner, never a name written in it: nobody
// silences another user's mail.
func NotifyKind(st *store.Ledger, o Options) Kind {
	return openKind("notify", NotifyDir(o.Dir), o,
		func(r *Request, owner int, perm fs.FileMode) error {
			r.UID, r.By = owner, o.userName(owner)
			return checkNotify(r, perm)
		},
		func(ctx context.Context, r *Request, owner int, key string) error {
			if r.Action == NotifyRecord {
				return applyRecord(ctx, st, r, owner, key, o)
			}
			return applyNotify(ctx, st, r, key, o)
		})
}

// checkNotify refuses a notify request that is not one rule turned off
// or on, or whose owner has no user name to keep the opt-out under.
func checkNotify(r *Request, perm fs.FileMode) error {
	switch {
	case perm&0o022 != 0:
		return fmt.Errorf("refused: writable by group or others (%v)", perm)
	case r.Schema != NotifySchema:
		return fmt.Errorf("refused: schema %q is not %s", r.Schema, NotifySchema)
	case r.Action == NotifyRecord:
		return checkRecord(r)
	case r.Action != NotifyOff && r.Action != NotifyOn:
		return fmt.Errorf("refused: action %q", r.Action)
	case r.Message != nil:
		return errors.New("refused: an opt-out carries no message")
	case r.Note != nil || len(r.Jobs) > 0 || r.Reason != "":
		return errors.New("refused: a notify request carries one rule, no note, jobs or reason")
	case len(r.Host) > maxNodeName || len(r.Cluster) > maxNodeName:
		return fmt.Errorf("refused: host or cluster longer than %d bytes", maxNodeName)
	case strings.HasPrefix(r.By, "uid "):
		// Opt-outs are kept by the Slurm user name the rules see.
		return fmt.Errorf("refused: uid %d has no user name", r.UID)
	}
	if err := CheckNotifyRule(r.Rule); err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	return nil
}

// applyNotify keeps the owner's opt-out of the request's rule (or takes
// it back) with the request's key, in one transaction.
func applyNotify(ctx context.Context, st *store.Ledger, r *Request, key string, o Options) error {
	return applyInOne(ctx, st, r, key, o, func(b *store.Batch) error {
		r.Changed = []string{r.Rule}
		return b.SetNotifyOptOut(r.By, r.Rule, r.Action == NotifyOff, o.Now)
	})
}

// applyInOne runs f and records key applied in one transaction of st,
// or neither; errAppliedBefore when the ledger holds key already.
func applyInOne(ctx context.Context, st *store.Ledger, r *Request, key string, o Options, f func(b *store.Batch) error) error {
	b, err := beginOnce(ctx, st, o.Now, r, "notify", key)
	if err != nil {
		return err
	}
	if err := f(b); err != nil {
		b.Rollback()
		return fmt.Errorf("apply notify request %s: %w", r.ID, err)
	}
	if err := commitApplied(b, key); err != nil {
		return fmt.Errorf("apply notify request %s: %w", r.ID, err)
	}
	return nil
}

// NotifyOutcome reads the outcome of the notify request id that owner
// filed under the request directory dir, once applied; an error
// wrapping fs.ErrNotExist while it is pending.
func NotifyOutcome(dir, id string, owner int) (Request, error) {
	r, _, _, err := readRequest(filepath.Join(appliedDir(NotifyDir(dir)), outcomeName(id, owner)))
	if err != nil {
		return Request{}, fmt.Errorf("notify request %s: %w", id, err)
	}
	return r, nil
}

// Message is a mail gpuacct mailprog sent (Error "") or could not send
// (Error why), for the writer to keep in the outbox: sent, or queued for
// the notifier to retry.
type Message struct {
	Key       string `json:"key"`
	Recipient string `json:"recipient"`
	Language  string `json:"language,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Job       *int64 `json:"job,omitempty"`
	Restart   int    `json:"restart,omitempty"`
	User      string `json:"user,omitempty"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
	Error     string `json:"error,omitempty"`
}

// checkRecord refuses a record that is not one job-end mail.
func checkRecord(r *Request) error {
	m := r.Message
	switch {
	case m == nil || r.Note != nil || len(r.Jobs) > 0 || r.Reason != "" || r.Rule != "":
		return errors.New("refused: a notify-record carries one message and nothing else")
	case !strings.HasPrefix(m.Key, notify.RuleJobEnd+":"):
		return fmt.Errorf("refused: key %q is no job-end mail's", m.Key)
	case len(m.Key) > 1024 || len(m.Recipient) > 1024 || len(m.Subject) > 4096:
		return errors.New("refused: key, recipient or subject too long")
	}
	return nil
}

// applyRecord keeps a job-end mail in the outbox, once by its key: sent
// at the request's time, or queued with its error for the notifier to
// send again. Only root and the service user (slurmctld's MailProg runs
// as SlurmUser: the service user) may: a queued record is a mail the
// writer sends to whom it says.
func applyRecord(ctx context.Context, st *store.Ledger, r *Request, owner int, key string, o Options) error {
	if o.Trusted != nil && !o.Trusted(owner) {
		r.Error = fmt.Sprintf("refused: owned by uid %d, not root or the service user", owner)
		return nil
	}
	m := r.Message
	at := r.made(o.Now)
	return applyInOne(ctx, st, r, key, o, func(b *store.Batch) error {
		r.Changed = []string{m.Key}
		id, added, err := b.EnqueueNotify(store.NotifyMessage{Key: m.Key, Rule: notify.RuleJobEnd, Recipient: m.Recipient, Channel: notify.ChannelMail,
			Language: m.Language, Cluster: m.Cluster, Job: m.Job, Restart: m.Restart, User: m.User, Subject: m.Subject, Body: m.Body, Created: at})
		switch {
		case err != nil || !added:
			return err
		case m.Error == "":
			return b.MarkNotifySent(id, at)
		}
		return b.MarkNotifyFailed(id, m.Error, o.Now, false)
	})
}
