package notify

import (
	"fmt"
	"strings"
	"time"
)

// IdleJob is what the idle rule found about one job run: the input of
// its message.
type IdleJob struct {
	Cluster             string
	JobID               int64
	Restart             int
	User, Account, Part string
	// GPUs is how many GPUs the run holds; Idle the ones found idle.
	GPUs int64
	Idle []IdleGPU
	// Threshold is the utilization (percent) under which a sample is idle.
	Threshold float64
	// IdleAfter is the rule's window.
	IdleAfter time.Duration
}

// IdleGPU is one idle GPU of an IdleJob.
type IdleGPU struct {
	Node  string
	Index *int64
	UUID  string
	Since time.Time
	For   time.Duration
}

// shortest is the shortest time any of j's GPUs has been idle: the
// subject's figure ("idle for at least").
func (j IdleJob) shortest() time.Duration {
	var d time.Duration
	for i, g := range j.Idle {
		if i == 0 || g.For < d {
			d = g.For
		}
	}
	return d
}

// jobName is the job as Slurm's commands take it (a requeued run keeps
// its job id).
func (j IdleJob) jobName() string { return fmt.Sprint(j.JobID) }

// idleText is the idle message in one language: format strings over
// the same arguments, each taking what its language needs by index.
type idleText struct {
	// subject: job, cluster, idle GPUs, GPUs, "GPU"/"GPUs", idle for.
	subject string
	// hello: user. holds: job, cluster, partition, account, GPUs, "GPU"/"GPUs".
	hello, holds string
	// idleFor: idle GPUs, "has"/"have", the rule's window.
	idleFor string
	// gpu: node, index, since, for.
	gpu string
	// means: threshold. check, cancel, exempt: job.
	means, check, cancel, exempt string
	footer                       string
}

var idleTexts = map[string]idleText{
	"en": {
		subject: "[gpusuite] job %[1]s on %[2]s: %[3]d of %[4]d %[5]s idle for %[6]s",
		hello:   "Hello %s,\n\n",
		holds:   "your job %[1]s (cluster %[2]s, partition %[3]s, account %[4]s) holds %[5]d %[6]s.\n",
		idleFor: "%[1]d of them %[2]s been idle for at least %[3]s:\n\n",
		gpu:     "  node %[1]s, GPU %[2]s: idle since %[3]s (%[4]s)\n",
		means: "\nIdle means that in every sample the job had no process on the GPU or\n" +
			"the GPU's utilization was under %g %%. An idle GPU is held from everyone\n" +
			"else and counts in your account's GPU-hours all the same.\n\n",
		check:  "To see the job's GPUs and how it used them:\n    gpuacct job %s\n",
		cancel: "If the job no longer needs them, cancel it:\n    scancel %s\n",
		exempt: "If the GPUs are idle on purpose, put gpuacct:noidlemail in the job's\n" +
			"comment and no such mail comes for it:\n    scontrol update job=%s comment=gpuacct:noidlemail\n\n",
		footer: "This mail comes once per job. -- gpusuite\n",
	},
	"ja": {
		subject: "[gpusuite] ジョブ %[1]s (%[2]s): GPU %[4]d 基中 %[3]d 基が %[6]sアイドル",
		hello:   "%s さん\n\n",
		holds:   "ジョブ %[1]s (クラスタ %[2]s、パーティション %[3]s、アカウント %[4]s) は GPU を %[5]d 基確保しています。\n",
		idleFor: "そのうち %[1]d 基が %[3]s以上アイドルです:\n\n",
		gpu:     "  ノード %[1]s、GPU %[2]s: %[3]s からアイドル (%[4]s)\n",
		means: "\nアイドルとは、どのサンプルでもジョブのプロセスが GPU に無かったか、\n" +
			"GPU 使用率が %g %% 未満だったことを指します。アイドルな GPU も他の人は使えず、\n" +
			"アカウントの GPU 時間として同じように計上されます。\n\n",
		check:  "ジョブの GPU と使用状況を見るには:\n    gpuacct job %s\n",
		cancel: "GPU が不要になったらジョブを取り消してください:\n    scancel %s\n",
		exempt: "意図してアイドルにしている場合は、ジョブのコメントに gpuacct:noidlemail を\n" +
			"入れるとこのメールは届きません:\n    scontrol update job=%s comment=gpuacct:noidlemail\n\n",
		footer: "このメールはジョブごとに一度だけ送られます。 -- gpusuite\n",
	},
}

// renderIdle is the idle rule's message to the job's owner in lang (en
// when it has no text), times in loc.
func renderIdle(j IdleJob, lang string, loc *time.Location) (subject, body string) {
	tx, lang := textIn(idleTexts, lang)
	gpus, have := "GPUs", "have"
	if j.GPUs == 1 {
		gpus = "GPU"
	}
	if len(j.Idle) == 1 {
		have = "has"
	}
	var b strings.Builder
	subject = fmt.Sprintf(tx.subject, j.jobName(), j.Cluster, len(j.Idle), j.GPUs, gpus, duration(j.shortest(), lang))
	fmt.Fprintf(&b, tx.hello, j.User)
	fmt.Fprintf(&b, tx.holds, j.jobName(), j.Cluster, j.Part, j.Account, j.GPUs, gpus)
	fmt.Fprintf(&b, tx.idleFor, len(j.Idle), have, duration(j.IdleAfter, lang))
	for _, g := range j.Idle {
		fmt.Fprintf(&b, tx.gpu, g.Node, index(g.Index), g.Since.In(loc).Format("2006-01-02 15:04 MST"), duration(g.For, lang))
	}
	fmt.Fprintf(&b, tx.means, j.Threshold)
	fmt.Fprintf(&b, tx.check, j.jobName())
	fmt.Fprintf(&b, tx.cancel, j.jobName())
	fmt.Fprintf(&b, tx.exempt, j.jobName())
	b.WriteString(tx.footer)
	return subject, b.String()
}

// textIn is a message's text in lang and lang itself, or its English
// text and "en" when texts has no lang.
func textIn[T any](texts map[string]T, lang string) (T, string) {
	if tx, ok := texts[lang]; ok {
		return tx, lang
	}
	return texts["en"], "en"
}

func index(i *int64) string {
	if i == nil {
		return "?"
	}
	return fmt.Sprint(*i)
}

// duration is d to the minute with its units: "1 h 20 min", "1時間 20分".
func duration(d time.Duration, lang string) string {
	m := int64(d / time.Minute)
	h, m := m/60, m%60
	hu, mu, sp := "h", "min", " "
	if lang == "ja" {
		hu, mu, sp = "時間", "分", ""
	}
	switch {
	case h == 0:
		return fmt.Sprintf("%d%s%s", m, sp, mu)
	case m == 0:
		return fmt.Sprintf("%d%s%s", h, sp, hu)
	}
	return fmt.Sprintf("%d%s%s %d%s%s", h, sp, hu, m, sp, mu)
}
