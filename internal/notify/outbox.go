package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/notify/deliver"
	"github.com/aicloud/gpusuite/internal/store"
)

// claimLimit bounds the messages one pass delivers; the rest wait for the
// next pass.
const claimLimit = 200

// passBudget bounds the time one pass spends delivering, each delivery
// within it: the writer's next ingest pass and systemd's watchdog ping
// (WatchdogSec=120) wait for it.
const passBudget = 30 * time.Second

// Deliver sends the messages due at now, and records each outcome: sent,
// queued again after a backoff, or given up with the reason (a permanent
// refusal, or notify.max_attempts reached). Messages over a recipient's
// rate and those the pass has no time left for wait, their attempt not
// counted.
func (n *Notifier) Deliver(ctx context.Context, now time.Time, res *Result) error {
	sent, err := n.st.NotifySentSince(ctx, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	b, err := n.st.Begin(ctx, now)
	if err != nil {
		return fmt.Errorf("claim messages: %w", err)
	}
	// A writer killed while delivering tries the claimed messages again
	// after the lease, not before.
	lease := max(2*n.cfg.Mail.Timeout.Duration, n.cfg.RetryMin.Duration)
	msgs, err := b.ClaimNotify(now, lease, claimLimit)
	if err != nil {
		b.Rollback()
		return err
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("claim messages: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, passBudget)
	defer cancel()
	type outcome struct {
		m   store.NotifyMessage
		err error
		// deferred: not tried; why says why.
		deferred bool
		why      string
	}
	var outs []outcome
	for _, m := range msgs {
		switch {
		case pctx.Err() != nil:
			outs = append(outs, outcome{m: m, deferred: true, why: "not tried: the pass ran out of time"})
		case m.Channel == ChannelMail && sent[m.Recipient] >= n.cfg.RatePerHour:
			outs = append(outs, outcome{m: m, deferred: true, why: fmt.Sprintf("waiting: %d messages to %s in the last hour (notify.rate_per_hour)", sent[m.Recipient], m.Recipient)})
		default:
			err := n.send(pctx, m)
			if err == nil {
				sent[m.Recipient]++
			}
			outs = append(outs, outcome{m: m, err: err})
		}
	}
	if len(outs) == 0 {
		return nil
	}
	// Outcomes are recorded whatever ctx says: a delivered message must
	// not be sent again for want of its mark.
	b, err = n.st.Begin(context.WithoutCancel(ctx), now)
	if err != nil {
		return fmt.Errorf("record deliveries: %w", err)
	}
	for _, o := range outs {
		m := o.m
		switch {
		case o.deferred:
			err = b.DeferNotify(m.ID, o.why, now.Add(n.cfg.RetryMin.Duration))
		case o.err == nil:
			err = b.MarkNotifySent(m.ID, now)
			res.Sent++
			n.m.delivered(m.Rule, m.Channel, "sent")
			n.log.Info("notify: sent", "rule", m.Rule, "key", m.Key, "to", m.Recipient, "via", m.Channel)
		case deliver.IsPermanent(o.err) || m.Attempts >= n.cfg.MaxAttempts:
			err = b.MarkNotifyFailed(m.ID, o.err.Error(), now, true)
			res.Failed++
			n.m.delivered(m.Rule, m.Channel, "failed")
			n.log.Error("notify: given up", "rule", m.Rule, "key", m.Key, "to", m.Recipient, "via", m.Channel, "attempts", m.Attempts, "err", o.err)
		default:
			next := now.Add(n.backoff(m.Attempts))
			err = b.MarkNotifyFailed(m.ID, o.err.Error(), next, false)
			res.Retry++
			n.m.delivered(m.Rule, m.Channel, "retry")
			n.log.Warn("notify: delivery failed; queued again", "rule", m.Rule, "key", m.Key, "to", m.Recipient, "via", m.Channel, "next", next, "err", o.err)
		}
		if err != nil {
			b.Rollback()
			return err
		}
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("record deliveries: %w", err)
	}
	return nil
}

// backoff is the wait after attempt: retry_min doubled each attempt, at
// most retry_max.
func (n *Notifier) backoff(attempt int) time.Duration {
	d := n.cfg.RetryMin.Duration
	for i := 1; i < attempt && d < n.cfg.RetryMax.Duration; i++ {
		d *= 2
	}
	return min(d, n.cfg.RetryMax.Duration)
}

// errNoAddress is a mail message to a user without an address.
var errNoAddress = &deliver.Error{Err: errors.New("no mail address for the user (notify.mail.address, notify.mail.addresses_file)"), Permanent: true}

// send delivers m once.
func (n *Notifier) send(ctx context.Context, m store.NotifyMessage) error {
	switch m.Channel {
	case ChannelMail:
		if m.Recipient == "" {
			return errNoAddress
		}
		sum := sha256.Sum256([]byte(m.Key))
		return n.smtp.Send(ctx, deliver.Mail{To: m.Recipient, Subject: m.Subject, Body: m.Body, Date: m.Created,
			MessageID: fmt.Sprintf("%s.%d@gpusuite", hex.EncodeToString(sum[:12]), m.ID)})
	case ChannelSlurm:
		return n.cancelJob(ctx, m)
	case ChannelWebhook:
		w, ok := n.hooks[m.Recipient]
		if !ok {
			return &deliver.Error{Err: fmt.Errorf("no webhook %q in [notify.webhooks]", m.Recipient), Permanent: true}
		}
		return w.Send(ctx, deliver.Post{Key: m.Key, Rule: m.Rule, Cluster: m.Cluster, Job: m.Job, User: m.User, Subject: m.Subject, Body: m.Body})
	}
	return &deliver.Error{Err: fmt.Errorf("unknown channel %q", m.Channel), Permanent: true}
}

// Test sends one message to addr through the configured mail server at
// once, keeping nothing: gpuacct notify test.
func (n *Notifier) Test(ctx context.Context, addr string, now time.Time) error {
	return n.smtp.Send(ctx, deliver.Mail{To: addr, Subject: "[gpusuite] test message", Date: now,
		Body: fmt.Sprintf("This is a test message from gpusuite's notifier, sent at %s\nthrough %s:%d.\n", now.In(n.loc).Format("2006-01-02 15:04:05 MST"), n.cfg.Mail.Host, n.cfg.Mail.Port)})
}
