package notify

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/boundcmd"
	"github.com/aicloud/gpusuite/internal/notify/deliver"
	"github.com/aicloud/gpusuite/internal/store"
)

// RuleCancel is the idle rule's escalation (notify.idle.cancel_after):
// the final warning and the cancel itself. A user cannot opt out of it;
// an exemption keeps a job from it.
const RuleCancel = "cancel"

// ChannelSlurm is an action on a job through Slurm's commands: the
// cancel, kept and retried as a message is.
const ChannelSlurm = "slurm"

// Bounds of the cancel's Slurm commands.
const (
	// slurmTimeout bounds each command.
	slurmTimeout = 30 * time.Second
	// maxComment bounds the comment the cancel leaves on the job: Slurm
	// keeps it in its database.
	maxComment = 1000
)

// cancelOn says whether the idle rule escalates to cancelling.
func (n *Notifier) cancelOn() bool { return n.cfg.Idle.CancelAfter.Duration > 0 }

// escalate is the next step for j, a run whose GPUs are all idle: once
// its idle warning went cancel_after ago, the final warning; once that
// went final_warning ago, the cancel. Each step waits for the one before
// to be delivered, so nobody is cancelled unwarned; each is kept under
// its own key, so it comes once.
func (n *Notifier) escalate(ctx context.Context, j IdleJob, warnKey string, now time.Time) ([]store.NotifyMessage, error) {
	warn, ok, err := n.st.NotifyByKey(ctx, warnKey)
	if err != nil || !ok || warn.SentAt == nil || now.Before(warn.SentAt.Add(n.cfg.Idle.CancelAfter.Duration)) {
		return nil, err
	}
	job := j.JobID
	cond := fmt.Sprintf("%s:%d+%d", j.Cluster, j.JobID, j.Restart)
	finalKey := RuleCancel + ":final:" + cond + ":user:" + j.User
	final, ok, err := n.st.NotifyByKey(ctx, finalKey)
	if err != nil {
		return nil, err
	}
	if !ok {
		lang := n.language(j.User)
		subject, body := renderFinal(j, lang, n.cfg.Idle.FinalWarning.Duration)
		return []store.NotifyMessage{{Key: finalKey, Rule: RuleCancel, Recipient: n.address(j.User), Channel: ChannelMail, Language: lang,
			Cluster: j.Cluster, Job: &job, Restart: j.Restart, User: j.User, Subject: subject, Body: body, Created: now}}, nil
	}
	if final.SentAt == nil || now.Before(final.SentAt.Add(n.cfg.Idle.FinalWarning.Duration)) {
		return nil, nil
	}
	reason := fmt.Sprintf("gpuacct: cancelled %s, all %d GPUs idle for %s (notify.idle.cancel_after)",
		now.UTC().Format("2006-01-02 15:04Z"), j.GPUs, duration(j.shortest(), "en"))
	return []store.NotifyMessage{{Key: RuleCancel + ":scancel:" + cond, Rule: RuleCancel, Recipient: "scancel", Channel: ChannelSlurm, Language: "en",
		Cluster: j.Cluster, Job: &job, Restart: j.Restart, User: j.User, Subject: fmt.Sprintf("cancel job %d", j.JobID), Body: reason, Created: now}}, nil
}

// finalText is the final warning in one language.
type finalText struct {
	// subject: job, cluster, idle for, cancel in. body: user, job,
	// cluster, GPUs, idle for, cancel in, exempt comment.
	subject, body string
}

var finalTexts = map[string]finalText{
	"en": {
		subject: "[gpusuite] job %[1]s on %[2]s will be cancelled in %[4]s: its GPUs idle for %[3]s",
		body: "Hello %[1]s,\n\n" +
			"all %[4]d GPUs of your job %[2]s (cluster %[3]s) have been idle for %[5]s,\n" +
			"since before the warning you got. This site cancels such jobs: gpusuite\n" +
			"will cancel job %[2]s in %[6]s from this mail unless it uses a GPU again,\n" +
			"and say why in the job's Slurm comment.\n\n" +
			"To see the job's GPUs and how it used them:\n    gpuacct job %[2]s\n" +
			"If the GPUs are idle on purpose, put %[7]s in the job's comment:\n" +
			"    scontrol update job=%[2]s comment=%[7]s\n\n" +
			"-- gpusuite\n",
	},
	"ja": {
		subject: "[gpusuite] ジョブ %[1]s (%[2]s) は %[4]s後に取り消されます: GPU が %[3]sアイドル",
		body: "%[1]s さん\n\n" +
			"ジョブ %[2]s (クラスタ %[3]s) の GPU %[4]d 基すべてが、先の警告の前から %[5]sアイドルです。\n" +
			"このサイトではこのようなジョブを取り消します: GPU が再び使われない限り、\n" +
			"gpusuite はこのメールから %[6]s後にジョブ %[2]s を取り消し、理由をジョブの Slurm コメントに残します。\n\n" +
			"ジョブの GPU と使用状況を見るには:\n    gpuacct job %[2]s\n" +
			"意図してアイドルにしている場合は、ジョブのコメントに %[7]s を入れてください:\n" +
			"    scontrol update job=%[2]s comment=%[7]s\n\n" +
			"-- gpusuite\n",
	},
}

// renderFinal is j's final warning in lang: cancelled in.
func renderFinal(j IdleJob, lang string, in time.Duration) (subject, body string) {
	tx, lang := textIn(finalTexts, lang)
	idle := duration(j.shortest(), lang)
	subject = fmt.Sprintf(tx.subject, j.jobName(), j.Cluster, idle, duration(in, lang))
	body = fmt.Sprintf(tx.body, j.User, j.jobName(), j.Cluster, j.GPUs, idle, duration(in, lang), "gpuacct:noidlemail")
	return subject, body
}

// cancelJob carries out a kept cancel: the reason appended to the job's
// Slurm comment, then scancel, each bounded. A job Slurm no longer
// knows or that ended is a permanent failure (nothing to cancel).
func (n *Notifier) cancelJob(ctx context.Context, m store.NotifyMessage) error {
	if m.Job == nil {
		return &deliver.Error{Err: errors.New("a cancel without a job"), Permanent: true}
	}
	id := strconv.FormatInt(*m.Job, 10)
	out, err := n.slurm(ctx, "squeue", "-h", "-j", id, "-o", "%k")
	if err != nil {
		return err
	}
	old := strings.TrimSpace(string(out))
	if old == "" {
		return &deliver.Error{Err: fmt.Errorf("job %s is no longer in Slurm's queue", id), Permanent: true}
	}
	if old == "(null)" {
		old = ""
	}
	if _, err := n.slurm(ctx, "scontrol", "update", "JobId="+id, "Comment="+appendComment(old, m.Body)); err != nil {
		return err
	}
	_, err = n.slurm(ctx, "scancel", id)
	return err
}

// appendComment is old with reason after it, at most maxComment bytes:
// the reason is kept whole, the old comment cut.
func appendComment(old, reason string) string {
	if old == "" {
		return reason
	}
	room := maxComment - len(reason) - len(" | ")
	if room <= 0 {
		return reason
	}
	if len(old) > room {
		old = strings.ToValidUTF8(old[:room], "")
	}
	return old + " | " + reason
}

// slurm runs one of Slurm's commands, bounded in time and output. A
// refusal for a job gone is permanent; anything else is tried again.
func (n *Notifier) slurm(ctx context.Context, name string, args ...string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, slurmTimeout)
	defer cancel()
	out, line, err := boundcmd.Output(cctx, exec.CommandContext(cctx, name, args...), 64<<10)
	if err == nil {
		return out, nil
	}
	err = fmt.Errorf("%s %s: %s: %w", name, strings.Join(args, " "), line, err)
	if strings.Contains(line, "Invalid job id") || strings.Contains(line, "already completed") || strings.Contains(line, "has already finished") {
		return nil, &deliver.Error{Err: err, Permanent: true}
	}
	return nil, err
}
