package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/notify/deliver"
	"github.com/aicloud/gpusuite/internal/store"
)

// SlurmMail is one mail slurmctld hands its MailProg: `MailProg -s
// SUBJECT RECIPIENT`, with the job in SLURM_JOB_* variables (Slurm
// 22.05's agent.c). Slurm writes no body; Body is what came on stdin.
type SlurmMail struct {
	Subject, To, Body string
	// From the environment; Job 0 when SLURM_JOB_ID is missing (no
	// summary then).
	Cluster, User, MailType, State string
	Job                            int64
	Restart                        int
}

// ParseSlurmMail reads the job of a MailProg call from getenv.
func ParseSlurmMail(subject, to, body string, getenv func(string) string) SlurmMail {
	m := SlurmMail{Subject: subject, To: to, Body: body, Cluster: getenv("SLURM_CLUSTER_NAME"), User: getenv("SLURM_JOB_USER"),
		MailType: getenv("SLURM_JOB_MAIL_TYPE"), State: getenv("SLURM_JOB_STATE")}
	m.Job, _ = strconv.ParseInt(getenv("SLURM_JOB_ID"), 10, 64)
	m.Restart, _ = strconv.Atoi(getenv("SLURM_JOB_RESTART_COUNT"))
	return m
}

// ended says whether m tells of a job's end: only then has the ledger a
// summary to add (Slurm's mail types "Ended" and "Failed"; a time limit
// or requeue mail keeps Slurm's text alone).
func (m SlurmMail) ended() bool { return m.MailType == "Ended" || m.MailType == "Failed" }

// JobEndPoll is how often JobEndSummary asks the ledger again while it
// waits for the job's end to arrive.
const JobEndPoll = 250 * time.Millisecond

// JobEndSummary is the gpusuite summary to append to m, read from st,
// waiting until ctx ends for the job's end to reach the ledger (the
// epilog's record is ingested after Slurm mails). "" when m is no end
// mail or the ledger has no such run by then. A run whose end has not
// arrived by then is summarised as far as the ledger knows, and says
// so.
func (n *Notifier) JobEndSummary(ctx context.Context, st *store.Ledger, m SlurmMail, now func() time.Time) (string, error) {
	if !m.ended() || m.Job == 0 {
		return "", nil
	}
	// A user who opted out of the job-end summary gets Slurm's mail as
	// Slurm wrote it: they asked Slurm for that mail.
	if m.User != "" {
		off, err := optedOut(ctx, st, m.User, RuleJobEnd)
		if err != nil {
			return "", err
		}
		if off {
			return "", nil
		}
	}
	q := store.RunQuery{JobID: m.Job, Cluster: m.Cluster, Restart: m.Restart}
	var last *store.JobRow
	for {
		j, err := st.Run(ctx, q)
		switch {
		case err == nil:
			last = &j
		case errors.Is(err, store.ErrNotFound):
		case ctx.Err() != nil:
		default:
			return "", fmt.Errorf("read job %d: %w", m.Job, err)
		}
		if last != nil && last.End != nil {
			break
		}
		t := time.NewTimer(JobEndPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == nil {
				return "", nil
			}
			return renderJobEnd(*last, nil, n.language(m.User), n.loc, now()), nil
		case <-t.C:
		}
	}
	u, err := runResources(ctx, st, last.Row)
	if err != nil && ctx.Err() == nil {
		return "", fmt.Errorf("read resources of job %d: %w", m.Job, err)
	}
	return renderJobEnd(*last, u, n.language(m.User), n.loc, now()), nil
}

// endResources is what sacct's reconcile gave for an ended run, with the
// highest memory peak of its GPUs (1 is all of that GPU's memory).
type endResources struct {
	store.Resources
	gpuMem *float64
}

// runResources is row's resources, nil while the reconcile that brings
// it (after the epilog's end) has not come, the mail then going without
// it rather than wait for sacct, or on a ledger older than
// store.ResourcesSchema (mailprog reads without migrating).
func runResources(ctx context.Context, st *store.Ledger, row int64) (*endResources, error) {
	if v, err := st.Version(ctx); err != nil || v < store.ResourcesSchema {
		return nil, err
	}
	us, err := st.Resources(ctx, []int64{row})
	if err != nil {
		return nil, err
	}
	u, ok := us[row]
	if !ok {
		return nil, nil
	}
	peaks, err := st.JobGPUMemPeaks(ctx, []int64{row})
	if err != nil {
		return nil, err
	}
	e := &endResources{Resources: u}
	if p, ok := peaks[row]; ok {
		e.gpuMem = &p
	}
	return e, nil
}

// jobEndText is the summary in one language.
type jobEndText struct {
	title, gpus, elapsed, gpuHours, util, idle, energy, unknown, estimated, running, ignored, details string

	resources resourcesText
}

// resourcesText is the run's CPU, memory and time section in one language:
// labels padded like the summary's, figures with every unit. The
// formats take their figures as strings, in the order the code gives
// them; a language picks its own order with %[n]s.
type resourcesText struct {
	cpu, mem, time, gpuMem  string
	notRecorded             string
	cpuEff, cpuTime         string // percent ("" for cpuTime), cores, CPU time, cores × elapsed
	memEff, memPeak         string // peak, asked per node, percent
	timeEff, noLimit        string // elapsed, limit, percent
	gpuPeak                 string // percent
	cpuTip, memTip, timeTip string
	core, cores             string // a count of cores: one, more
	seconds                 string // a time under a minute
}

var jobEndTexts = map[string]jobEndText{
	"en": {
		title:     "\n-- gpusuite: the GPUs of job %s (cluster %s) --\n",
		gpus:      "GPUs:         %d\n",
		elapsed:   "Elapsed:      %s\n",
		gpuHours:  "GPU-hours:    %.2f GPU-h allocated\n",
		util:      "Utilization:  %.1f %% (GPU time used / allocated)\n",
		idle:      "Idle:         %.1f %% of the GPU time (%.2f GPU-h)\n",
		energy:    "Energy:       %.3f kWh\n",
		unknown:   "Utilization:  unknown (no samples of the job's GPUs)\n",
		estimated: "Note:         the end is the hooks' clock, not Slurm's (sacct did not answer)\n",
		running:   "Note:         the job's end has not reached the ledger yet: figures up to %s\n",
		ignored:   "Note:         this job does not count in reports (%s)\n",
		details:   "Details:      gpuacct job %s\n",
		resources: resourcesText{
			cpu:         "CPU:          ",
			mem:         "Memory:       ",
			time:        "Time:         ",
			gpuMem:      "GPU memory:   ",
			notRecorded: "not recorded (JobAcctGatherType is none)",
			cpuEff:      "%s of %s (CPU time %s of %s)",
			cpuTime:     "CPU time %[3]s on %[2]s",
			memEff:      "peak %s of %s per node (%s)",
			memPeak:     "peak %s (no memory asked for)",
			timeEff:     "%s of the %s limit (%s)",
			noLimit:     "%s, no limit",
			gpuPeak:     "peak %s of the GPU's memory",
			cpuTip:      "%s would do (%s busy + 20 %%)",
			memTip:      "--mem=%s would do (peak %s + 20 %%)",
			timeTip:     "--time=%s would do",
			core:        "%d core",
			cores:       "%d cores",
			seconds:     "%d s",
		},
	},
	"ja": {
		title:     "\n-- gpusuite: ジョブ %s (クラスタ %s) の GPU --\n",
		gpus:      "GPU 数:       %d 基\n",
		elapsed:   "経過時間:     %s\n",
		gpuHours:  "GPU 時間:     %.2f GPU 時間 (確保)\n",
		util:      "使用率:       %.1f %% (使用 / 確保した GPU 時間)\n",
		idle:      "アイドル:     GPU 時間の %.1f %% (%.2f GPU 時間)\n",
		energy:    "電力量:       %.3f kWh\n",
		unknown:   "使用率:       不明 (ジョブの GPU のサンプルがありません)\n",
		estimated: "注:           終了時刻はフックの時計によるもので Slurm のものではありません (sacct が応答しませんでした)\n",
		running:   "注:           ジョブの終了はまだ台帳に届いていません: %s までの数値です\n",
		ignored:   "注:           このジョブは集計に含まれません (%s)\n",
		details:   "詳細:         gpuacct job %s\n",
		resources: resourcesText{
			cpu:         "CPU:          ",
			mem:         "メモリ:       ",
			time:        "時間制限:     ",
			gpuMem:      "GPU メモリ:   ",
			notRecorded: "記録なし (JobAcctGatherType が none)",
			cpuEff:      "%[2]s で %[1]s (CPU 時間 %[3]s / %[4]s)",
			cpuTime:     "CPU 時間 %[3]s (%[2]s)",
			memEff:      "ノードあたり %[2]s のうちピーク %[1]s (%[3]s)",
			memPeak:     "ピーク %s (メモリの指定なし)",
			timeEff:     "制限 %[2]s のうち %[1]s (%[3]s)",
			noLimit:     "%s (制限なし)",
			gpuPeak:     "GPU のメモリのピーク %s",
			cpuTip:      "%s で足ります (稼働 %s コア + 20 %%)",
			memTip:      "--mem=%s で足ります (ピーク %s + 20 %%)",
			timeTip:     "--time=%s で足ります",
			core:        "%d コア",
			cores:       "%d コア",
			seconds:     "%d秒",
		},
	},
}

// renderJobEnd is j's summary in lang, times in loc; now ends a run
// whose end has not arrived. u, when sacct's resources have arrived, adds the
// run's CPU, memory and time.
func renderJobEnd(j store.JobRow, u *endResources, lang string, loc *time.Location, now time.Time) string {
	tx, lang := textIn(jobEndTexts, lang)
	var b strings.Builder
	fmt.Fprintf(&b, tx.title, j.ID(), j.Cluster)
	fmt.Fprintf(&b, tx.gpus, j.GPUs)
	fmt.Fprintf(&b, tx.elapsed, duration(time.Duration(j.Elapsed(now))*time.Second, lang))
	alloc := float64(j.AllocS)
	if j.End == nil {
		alloc = float64(j.GPUs * j.Elapsed(now))
	}
	fmt.Fprintf(&b, tx.gpuHours, alloc/3600)
	if j.SampleS > 0 && alloc > 0 {
		fmt.Fprintf(&b, tx.util, 100*j.UsedS/alloc)
		fmt.Fprintf(&b, tx.idle, 100*j.IdleS/alloc, j.IdleS/3600)
	} else {
		b.WriteString(tx.unknown)
	}
	if j.EnergyMJ > 0 {
		fmt.Fprintf(&b, tx.energy, float64(j.EnergyMJ)/3.6e9)
	}
	if u != nil {
		tx.resources.write(&b, *u, lang)
	}
	if j.End == nil {
		fmt.Fprintf(&b, tx.running, now.In(loc).Format("2006-01-02 15:04 MST"))
	} else if j.EndEstimated {
		b.WriteString(tx.estimated)
	}
	if j.Ignored {
		fmt.Fprintf(&b, tx.ignored, j.Reason())
	}
	fmt.Fprintf(&b, tx.details, j.ID())
	return b.String()
}

// write adds u's section to b: each figure, or "not recorded" where the
// job accounting gather measured none (never 0), and what to ask for
// next time where the run is far off.
func (tx resourcesText) write(b *strings.Builder, u endResources, lang string) {
	e, ask := u.Efficiency(), u.Ask()
	elapsed := u.Elapsed.Seconds()
	pct := func(r float64) string { return fmt.Sprintf("%.1f %%", 100*r) }
	dur := func(s float64) string {
		d := time.Duration(math.Round(s)) * time.Second
		if d < time.Minute {
			return fmt.Sprintf(tx.seconds, int64(d/time.Second))
		}
		return duration(d, lang)
	}
	cores := func(n int64) string {
		if n == 1 {
			return fmt.Sprintf(tx.core, n)
		}
		return fmt.Sprintf(tx.cores, n)
	}
	line := func(label, figure, tip string) {
		if tip != "" {
			figure += "; " + tip
		}
		b.WriteString(label + figure + "\n")
	}
	cpu, tip := tx.notRecorded, ""
	if u.TotalCPU.Known {
		busy := float64(u.TotalCPU.Value) / 1000
		cpu = fmt.Sprintf(tx.cpuTime, "", cores(u.AllocCPUs), dur(busy))
		if e.CPU.Known {
			cpu = fmt.Sprintf(tx.cpuEff, pct(e.CPU.Value), cores(u.AllocCPUs), dur(busy), dur(float64(u.AllocCPUs)*elapsed))
			if ask.Cores > 0 {
				tip = fmt.Sprintf(tx.cpuTip, cores(ask.Cores), fmt.Sprintf("%.1f", ask.Busy))
			}
		}
	}
	line(tx.cpu, cpu, tip)
	mem, tip := tx.notRecorded, ""
	switch {
	case e.Memory.Known:
		mem = fmt.Sprintf(tx.memEff, sizeText(u.MaxRSS.Value), sizeText(u.ReqMem.Value), pct(e.Memory.Value))
		if ask.Mem != "" {
			tip = fmt.Sprintf(tx.memTip, ask.Mem, sizeText(u.MaxRSS.Value))
		}
	case u.MaxRSS.Known:
		mem = fmt.Sprintf(tx.memPeak, sizeText(u.MaxRSS.Value))
	}
	line(tx.mem, mem, tip)
	tm, tip := fmt.Sprintf(tx.noLimit, dur(elapsed)), ""
	if e.Time.Known {
		tm = fmt.Sprintf(tx.timeEff, dur(elapsed), dur(float64(u.TimeLimit.Value)), pct(e.Time.Value))
		if ask.Time != "" {
			tip = fmt.Sprintf(tx.timeTip, ask.Time)
		}
	}
	line(tx.time, tm, tip)
	if u.gpuMem != nil {
		line(tx.gpuMem, fmt.Sprintf(tx.gpuPeak, pct(*u.gpuMem)), "")
	}
}

// sizeText is a size in GiB, in MiB under one.
func sizeText(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// JobEndKey is the outbox's key of m sent to its recipient: Slurm mails
// once per job, mail type and recipient.
func JobEndKey(m SlurmMail) string {
	return fmt.Sprintf("%s:%s:%d+%d:%s:to:%s", RuleJobEnd, m.Cluster, m.Job, m.Restart, m.MailType, m.To)
}

// SendSlurmMail sends Slurm's mail m with summary appended to m.To (a
// user name, as Slurm gives one without --mail-user, is mapped to its
// address as the rules' mails are, else handed to the mail server as it
// is, as Slurm's mail(1) would), and returns the message as the outbox
// keeps it with the delivery's error.
func (n *Notifier) SendSlurmMail(ctx context.Context, m SlurmMail, summary string, now time.Time) (store.NotifyMessage, error) {
	to := m.To
	if a := n.address(to); !strings.Contains(to, "@") && a != "" {
		to = a
	}
	body := m.Body
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	body += summary
	job := m.Job
	msg := store.NotifyMessage{Key: JobEndKey(m), Rule: RuleJobEnd, Recipient: to, Channel: ChannelMail, Language: n.language(m.User),
		Cluster: m.Cluster, Job: &job, Restart: m.Restart, User: m.User, Subject: m.Subject, Body: body, Created: now}
	if m.Job == 0 {
		msg.Job = nil
	}
	sum := sha256.Sum256([]byte(msg.Key))
	err := n.smtp.Send(ctx, deliver.Mail{To: to, Subject: m.Subject, Body: body, Date: now, MessageID: hex.EncodeToString(sum[:12]) + ".jobend@gpusuite"})
	return msg, err
}
