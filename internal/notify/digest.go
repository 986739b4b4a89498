package notify

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of a digest pass.
const (
	// maxDigestRuns bounds the job runs one digest pass reads: a week of
	// a large cluster's jobs.
	maxDigestRuns = 1_000_000
	// digestWorst is how many of a user's jobs a digest lists.
	digestWorst = 3
)

// DigestJob is one job of a UserDigest's list.
type DigestJob struct {
	ID, Cluster string
	GPUs        int64
	// Usage is the run's GPU-seconds, as the ledger has them.
	store.Usage
}

// WeekSums are a digest's runs summed: the user's, the team's or the
// cluster's.
type WeekSums struct {
	Jobs                  int
	AllocS                int64
	UsedS, IdleS, SampleS float64
}

// add counts j in s.
func (s *WeekSums) add(j *store.JobRow) {
	s.Jobs++
	s.AllocS += j.AllocS
	s.UsedS += j.UsedS
	s.IdleS += j.IdleS
	s.SampleS += j.SampleS
}

// sampled says whether the runs' GPUs were sampled, so that their
// utilization and idle time are known.
func (s WeekSums) sampled() bool { return s.SampleS > 0 && s.AllocS > 0 }

// UserDigest is one user's week: the runs that ended in [From, To).
type UserDigest struct {
	User, Week string
	From, To   time.Time
	WeekSums
	// Worst are the jobs that left their GPUs idle longest.
	Worst []DigestJob
	// Advice is what the week's runs suggest (notify.digest.advice).
	Advice []Advice
}

// digests are a week's UserDigests by name: users', or teams' in the
// admins' digest.
type digests map[string]*UserDigest

// add counts j in the digest of name, made on first use.
func (m digests) add(name string, j *store.JobRow) {
	u := m[name]
	if u == nil {
		u = &UserDigest{User: name}
		m[name] = u
	}
	u.add(j)
}

// ranked is m's digests, the largest figure first (by name on a tie).
func ranked[F cmp.Ordered](m digests, figure func(UserDigest) F) []UserDigest {
	out := make([]UserDigest, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, *m[k])
	}
	sort.SliceStable(out, func(a, b int) bool { return figure(out[a]) > figure(out[b]) })
	return out
}

// week is the week before the one now is in (Monday 00:00 in loc) and
// its ISO name, 2026-W09.
func week(now time.Time, loc *time.Location) (from, to time.Time, name string) {
	t := now.In(loc)
	days := (int(t.Weekday()) + 6) % 7 // since Monday
	to = time.Date(t.Year(), t.Month(), t.Day()-days, 0, 0, 0, 0, loc)
	from = to.AddDate(0, 0, -7)
	y, w := from.ISOWeek()
	return from, to, fmt.Sprintf("%d-W%02d", y, w)
}

// digestDue says whether the week before now's has not been digested by
// this notifier yet; the keys keep a restarted one from sending again.
func (n *Notifier) digestDue(now time.Time) bool {
	_, _, name := week(now, n.loc)
	return n.cfg.Digest.Enabled && n.digested != name
}

// digestMessages are the digests of the week before now's (only user's
// when user is set): one per user with a run that ended in it, unless
// they opted out.
func (n *Notifier) digestMessages(ctx context.Context, now time.Time, user string) ([]store.NotifyMessage, error) {
	w, err := n.gatherWeek(ctx, now, user)
	if err != nil {
		return nil, err
	}
	name, byUser, byTeam, admins := w.name, w.byUser, w.byTeam, w.admins
	var out []store.NotifyMessage
	for _, u := range slices.Sorted(maps.Keys(byUser)) {
		off, err := optedOut(ctx, n.st, u, RuleDigest)
		if err != nil {
			return nil, fmt.Errorf("digest of %s: %w", name, err)
		}
		if off {
			continue
		}
		lang := n.language(u)
		subject, body := renderDigest(*byUser[u], lang)
		out = append(out, store.NotifyMessage{Key: RuleDigest + ":" + name + ":user:" + u, Rule: RuleDigest, Recipient: n.address(u), Channel: ChannelMail,
			Language: lang, User: u, Subject: subject, Body: body, Created: now})
	}
	leads, err := n.leadMessages(ctx, byTeam, now)
	if err != nil {
		return nil, fmt.Errorf("digest of %s: %w", name, err)
	}
	out = append(out, leads...)
	if admins != nil {
		adm, err := n.adminMessages(ctx, admins, now)
		if err != nil {
			return nil, fmt.Errorf("digest of %s: %w", name, err)
		}
		out = append(out, adm...)
	}
	return out, nil
}

// digestText is the digest in one language.
type digestText struct {
	// subject: week, GPU-h, utilization. intro: user, week, from, to.
	subject, subjectUnknown, hello, intro string
	jobs, gpuHours, util, unknown, idle   string
	worst, job, footer                    string
}

var digestTexts = map[string]digestText{
	"en": {
		subject:        "[gpusuite] your GPU week %[1]s: %.2[2]f GPU-h, %.1[3]f %% used",
		subjectUnknown: "[gpusuite] your GPU week %[1]s: %.2[2]f GPU-h",
		hello:          "Hello %s,\n\n",
		intro:          "your jobs that ended in week %[1]s (%[2]s to %[3]s):\n\n",
		jobs:           "  jobs:         %d\n",
		gpuHours:       "  GPU-hours:    %.2f GPU-h allocated\n",
		util:           "  utilization:  %.1f %% (GPU time used / allocated)\n",
		unknown:        "  utilization:  unknown (no samples of the jobs' GPUs)\n",
		idle:           "  idle:         %.2f GPU-h (%.1f %% of the GPU time)\n",
		worst:          "\nThe jobs that left their GPUs idle longest:\n",
		job:            "  job %s (%s): %d %s, %.2f GPU-h, %.2f GPU-h idle (%.1f %%)\n",
		footer: "\nTo see a job and how it used its GPUs:\n    gpuacct job ID\n" +
			"To get no more of these mails:\n    gpuacct notify off --rule digest\n\n-- gpusuite\n",
	},
	"ja": {
		subject:        "[gpusuite] %[1]s の GPU 利用: %.2[2]f GPU 時間、使用率 %.1[3]f %%",
		subjectUnknown: "[gpusuite] %[1]s の GPU 利用: %.2[2]f GPU 時間",
		hello:          "%s さん\n\n",
		intro:          "%[1]s (%[2]s から %[3]s) に終了したジョブ:\n\n",
		jobs:           "  ジョブ数:     %d\n",
		gpuHours:       "  GPU 時間:     %.2f GPU 時間 (確保)\n",
		util:           "  使用率:       %.1f %% (使用 / 確保した GPU 時間)\n",
		unknown:        "  使用率:       不明 (ジョブの GPU のサンプルがありません)\n",
		idle:           "  アイドル:     %.2f GPU 時間 (GPU 時間の %.1f %%)\n",
		worst:          "\nGPU のアイドルが長かったジョブ:\n",
		job:            "  ジョブ %[1]s (%[2]s): GPU %[3]d 基、%.2[5]f GPU 時間、アイドル %.2[6]f GPU 時間 (%.1[7]f %%)\n",
		footer: "\nジョブと GPU の使用状況を見るには:\n    gpuacct job ID\n" +
			"このメールが不要なら:\n    gpuacct notify off --rule digest\n\n-- gpusuite\n",
	},
}

// digestText is lang's text, English when it has none.
func digestTextOf(lang string) digestText {
	tx, _ := textIn(digestTexts, lang)
	return tx
}

// writeSums writes a digest's figures: jobs, GPU-hours, utilization and
// idle share.
func writeSums(b *strings.Builder, tx digestText, s WeekSums) {
	fmt.Fprintf(b, tx.jobs, s.Jobs)
	fmt.Fprintf(b, tx.gpuHours, float64(s.AllocS)/3600)
	if s.sampled() {
		fmt.Fprintf(b, tx.util, 100*s.UsedS/float64(s.AllocS))
		fmt.Fprintf(b, tx.idle, s.IdleS/3600, 100*s.IdleS/float64(s.AllocS))
	} else {
		b.WriteString(tx.unknown)
	}
}

// renderDigest is d in lang.
func renderDigest(d UserDigest, lang string) (subject, body string) {
	tx := digestTextOf(lang)
	hours := float64(d.AllocS) / 3600
	if d.sampled() {
		subject = fmt.Sprintf(tx.subject, d.Week, hours, 100*d.UsedS/float64(d.AllocS))
	} else {
		subject = fmt.Sprintf(tx.subjectUnknown, d.Week, hours)
	}
	var b strings.Builder
	fmt.Fprintf(&b, tx.hello, d.User)
	fmt.Fprintf(&b, tx.intro, d.Week, d.From.Format("2006-01-02"), d.To.AddDate(0, 0, -1).Format("2006-01-02"))
	writeSums(&b, tx, d.WeekSums)
	if len(d.Worst) > 0 {
		b.WriteString(tx.worst)
		for _, j := range d.Worst {
			share := 0.0
			if j.AllocS > 0 {
				share = 100 * j.IdleS / float64(j.AllocS)
			}
			gpus := "GPUs"
			if j.GPUs == 1 {
				gpus = "GPU"
			}
			fmt.Fprintf(&b, tx.job, j.ID, j.Cluster, j.GPUs, gpus, float64(j.AllocS)/3600, j.IdleS/3600, share)
		}
	}
	writeAdvice(&b, d.Advice, lang)
	b.WriteString(tx.footer)
	return subject, b.String()
}

// weekSums is a week's runs gathered for its digests.
type weekSums struct {
	name   string
	byUser map[string]*UserDigest
	byTeam map[string]*TeamDigest
	admins *adminSums // nil: no admins' digest
}

// gatherWeek sums the runs that ended in the week before now's (only
// user's when user is set) for each digest, with each user's advice.
func (n *Notifier) gatherWeek(ctx context.Context, now time.Time, user string) (weekSums, error) {
	from, to, name := week(now, n.loc)
	byUser := map[string]*UserDigest{}
	byTeam := map[string]*TeamDigest{}
	read := 0
	var admins *adminSums
	if user == "" && len(n.cfg.Digest.Admins) > 0 {
		admins = &adminSums{d: AdminDigest{Week: name, From: from, To: to}, users: digests{}, teams: digests{}}
	}
	var advice *adviceRuns
	if n.cfg.Digest.Advice.Enabled {
		advice = &adviceRuns{gpus: map[string][]store.JobRow{}, rows: map[string][]int64{}}
	}
	q := store.JobsQuery{From: from.Unix(), To: to.Unix()}
	if user != "" {
		q.Users = []string{user}
	}
	err := n.st.Jobs(ctx, q, func(j *store.JobRow) bool {
		read++
		if j.End == nil || *j.End < from.Unix() || *j.End >= to.Unix() {
			return read < maxDigestRuns
		}
		d := byUser[j.User]
		if d == nil {
			d = &UserDigest{User: j.User, Week: name, From: from, To: to}
			byUser[j.User] = d
		}
		team := n.teams.Team(j.Account, j.User)
		if admins != nil {
			admins.add(j, team)
		}
		if len(n.cfg.Digest.Leads[team]) > 0 && user == "" {
			td := byTeam[team]
			if td == nil {
				td = &TeamDigest{Team: team, Week: name, From: from, To: to, users: digests{}}
				byTeam[team] = td
			}
			td.add(j)
		}
		if advice != nil {
			n.adviceAdd(advice, j)
		}
		d.add(j)
		if j.IdleS > 0 {
			d.Worst = append(d.Worst, DigestJob{ID: j.ID(), Cluster: j.Cluster, GPUs: j.GPUs, Usage: j.Usage})
			sort.SliceStable(d.Worst, func(a, b int) bool { return d.Worst[a].IdleS > d.Worst[b].IdleS })
			d.Worst = d.Worst[:min(len(d.Worst), digestWorst)]
		}
		return read < maxDigestRuns
	})
	if err != nil {
		return weekSums{}, fmt.Errorf("digest of %s: %w", name, err)
	}
	if advice != nil {
		if err := n.advise(ctx, advice, byUser); err != nil {
			return weekSums{}, fmt.Errorf("digest of %s: %w", name, err)
		}
	}
	return weekSums{name: name, byUser: byUser, byTeam: byTeam, admins: admins}, nil
}
