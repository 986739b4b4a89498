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

// renderIdle is the idle rule's message to the job's owner in lang, times
// in loc.
func renderIdle(j IdleJob, lang string, loc *time.Location) (subject, body string) {
	if lang == "ja" {
		return renderIdleJa(j, loc)
	}
	var b strings.Builder
	gpus, have := "GPUs", "have"
	if j.GPUs == 1 {
		gpus = "GPU"
	}
	if len(j.Idle) == 1 {
		have = "has"
	}
	subject = fmt.Sprintf("[gpusuite] job %s on %s: %d of %d %s idle for %s", j.jobName(), j.Cluster, len(j.Idle), j.GPUs, gpus, duration(j.shortest(), "en"))
	fmt.Fprintf(&b, "Hello %s,\n\n", j.User)
	fmt.Fprintf(&b, "your job %s (cluster %s, partition %s, account %s) holds %d %s.\n", j.jobName(), j.Cluster, j.Part, j.Account, j.GPUs, gpus)
	fmt.Fprintf(&b, "%d of them %s been idle for at least %s:\n\n", len(j.Idle), have, duration(j.IdleAfter, "en"))
	for _, g := range j.Idle {
		fmt.Fprintf(&b, "  node %s, GPU %s: idle since %s (%s)\n", g.Node, index(g.Index), g.Since.In(loc).Format("2006-01-02 15:04 MST"), duration(g.For, "en"))
	}
	fmt.Fprintf(&b, "\nIdle means that in every sample the job had no process on the GPU or\n"+
		"the GPU's utilization was under %g %%. An idle GPU is held from everyone\n"+
		"else and counts in your account's GPU-hours all the same.\n\n", j.Threshold)
	fmt.Fprintf(&b, "To see the job's GPUs and how it used them:\n    gpuacct job %s\n", j.jobName())
	fmt.Fprintf(&b, "If the job no longer needs them, cancel it:\n    scancel %s\n", j.jobName())
	fmt.Fprintf(&b, "If the GPUs are idle on purpose, put gpuacct:noidlemail in the job's\n"+
		"comment and no such mail comes for it:\n    scontrol update job=%s comment=gpuacct:noidlemail\n\n", j.jobName())
	b.WriteString("This mail comes once per job. -- gpusuite\n")
	return subject, b.String()
}

func renderIdleJa(j IdleJob, loc *time.Location) (subject, body string) {
	var b strings.Builder
	subject = fmt.Sprintf("[gpusuite] ジョブ %s (%s): GPU %d 基中 %d 基が %sアイドル", j.jobName(), j.Cluster, j.GPUs, len(j.Idle), duration(j.shortest(), "ja"))
	fmt.Fprintf(&b, "%s さん\n\n", j.User)
	fmt.Fprintf(&b, "ジョブ %s (クラスタ %s、パーティション %s、アカウント %s) は GPU を %d 基確保しています。\n", j.jobName(), j.Cluster, j.Part, j.Account, j.GPUs)
	fmt.Fprintf(&b, "そのうち %d 基が %s以上アイドルです:\n\n", len(j.Idle), duration(j.IdleAfter, "ja"))
	for _, g := range j.Idle {
		fmt.Fprintf(&b, "  ノード %s、GPU %s: %s からアイドル (%s)\n", g.Node, index(g.Index), g.Since.In(loc).Format("2006-01-02 15:04 MST"), duration(g.For, "ja"))
	}
	fmt.Fprintf(&b, "\nアイドルとは、どのサンプルでもジョブのプロセスが GPU に無かったか、\n"+
		"GPU 使用率が %g %% 未満だったことを指します。アイドルな GPU も他の人は使えず、\n"+
		"アカウントの GPU 時間として同じように計上されます。\n\n", j.Threshold)
	fmt.Fprintf(&b, "ジョブの GPU と使用状況を見るには:\n    gpuacct job %s\n", j.jobName())
	fmt.Fprintf(&b, "GPU が不要になったらジョブを取り消してください:\n    scancel %s\n", j.jobName())
	fmt.Fprintf(&b, "意図してアイドルにしている場合は、ジョブのコメントに gpuacct:noidlemail を\n"+
		"入れるとこのメールは届きません:\n    scontrol update job=%s comment=gpuacct:noidlemail\n\n", j.jobName())
	b.WriteString("このメールはジョブごとに一度だけ送られます。 -- gpusuite\n")
	return subject, b.String()
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
