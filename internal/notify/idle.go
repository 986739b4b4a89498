package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// maxRunningJobs bounds the running job runs one evaluation reads: far
// more than a cluster runs at once.
const maxRunningJobs = 20_000

// idleMessages are the idle rule's messages at now (only user's when user
// is set) and how many running runs it looked at. A GPU is idle when
// its samples cover at least half the rule's window, none of them busy
// for the job, and the newest is fresh: a GPU without samples (its agent
// or node down) is unknown, never idle. One message per run and
// recipient, whatever its number of idle GPUs.
func (n *Notifier) idleMessages(ctx context.Context, now time.Time, user string) ([]store.NotifyMessage, int, error) {
	rule := n.cfg.Idle
	window := rule.IdleAfter.Duration
	gpus, err := n.st.IdleGPUs(ctx, now.Add(-window).UnixMilli(), maxRunningJobs)
	if err != nil {
		return nil, 0, fmt.Errorf("idle rule: %w", err)
	}
	fresh := now.Add(-rule.StaleAfter.Duration).UnixMilli()
	var idle []store.IdleGPU
	jobs := map[int64]bool{}
	// held counts each run's GPUs: the cancel waits for all of them.
	held := map[int64]int{}
	for _, g := range gpus {
		jobs[g.Row] = true
		held[g.Row]++
		if user != "" && g.User != user || n.exempt(g) {
			continue
		}
		if g.BusyMs == 0 && g.WindowMs >= window.Milliseconds()/2 && g.NewestMs >= fresh {
			idle = append(idle, g)
		}
	}
	if len(idle) == 0 {
		return nil, len(jobs), nil
	}
	if err := n.st.IdleSince(ctx, idle); err != nil {
		return nil, len(jobs), fmt.Errorf("idle rule: %w", err)
	}
	offs := map[string]bool{}
	var out []store.NotifyMessage
	for start := 0; start < len(idle); {
		end := start + 1
		for end < len(idle) && idle[end].Row == idle[start].Row {
			end++
		}
		run := idle[start:end]
		start = end
		g := run[0]
		off, ok := offs[g.User]
		if !ok {
			var err error
			if off, err = optedOut(ctx, n.st, g.User, RuleIdle); err != nil {
				return nil, len(jobs), fmt.Errorf("idle rule: %w", err)
			}
			offs[g.User] = off
		}
		// With the cancel on, a run whose GPUs are all idle is warned
		// whatever its owner opted out of: nobody is cancelled unwarned.
		all := n.cancelOn() && len(run) == held[g.Row]
		if off && !all {
			continue
		}
		j := IdleJob{Cluster: g.Cluster, JobID: g.JobID, Restart: g.Restart, User: g.User, Account: g.Account, Part: g.Partition,
			GPUs: g.JobGPUs, Threshold: n.thr, IdleAfter: window}
		for _, x := range run {
			since := time.UnixMilli(x.IdleSinceMs)
			j.Idle = append(j.Idle, IdleGPU{Node: x.Node, Index: x.Index, UUID: x.UUID, Since: since, For: now.Sub(since)})
		}
		msgs := n.idleJobMessages(j, now)
		out = append(out, msgs...)
		if all {
			esc, err := n.escalate(ctx, j, msgs[0].Key, now)
			if err != nil {
				return nil, len(jobs), fmt.Errorf("idle rule: %w", err)
			}
			out = append(out, esc...)
		}
	}
	return out, len(jobs), nil
}

// idleJobMessages are j's messages: its owner's mail, and the webhook's
// post when notify.idle.webhook is set.
func (n *Notifier) idleJobMessages(j IdleJob, now time.Time) []store.NotifyMessage {
	job := j.JobID
	cond := fmt.Sprintf("%s:%d+%d", j.Cluster, j.JobID, j.Restart)
	lang := n.language(j.User)
	subject, body := renderIdle(j, lang, n.loc)
	out := []store.NotifyMessage{{Key: RuleIdle + ":" + cond + ":user:" + j.User, Rule: RuleIdle, Recipient: n.address(j.User), Channel: ChannelMail,
		Language: lang, Cluster: j.Cluster, Job: &job, Restart: j.Restart, User: j.User, Subject: subject, Body: body, Created: now}}
	if hook := n.cfg.Idle.Webhook; hook != "" {
		subject, body := renderIdle(j, n.cfg.Language, n.loc)
		out = append(out, store.NotifyMessage{Key: RuleIdle + ":" + cond + ":webhook:" + hook, Rule: RuleIdle, Recipient: hook, Channel: ChannelWebhook,
			Language: n.cfg.Language, Cluster: j.Cluster, Job: &job, Restart: j.Restart, User: j.User, Subject: subject, Body: body, Created: now})
	}
	return out
}

// exempt says whether the idle rule leaves g's job alone.
func (n *Notifier) exempt(g store.IdleGPU) bool {
	r := n.cfg.Idle
	return slices.Contains(r.ExemptUsers, g.User) || slices.Contains(r.ExemptAccounts, g.Account) ||
		slices.Contains(r.ExemptPartitions, g.Partition) || g.QOS != "" && slices.Contains(r.ExemptQOS, g.QOS) ||
		r.ExemptComment != "" && strings.Contains(g.Comment, r.ExemptComment)
}
