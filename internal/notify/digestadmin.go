package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of the admins' digest.
const (
	// adminTop is how many users and teams it ranks by idle GPU-hours.
	adminTop = 5
	// adminListed bounds the foreign-process GPUs and stale nodes it
	// lists; the rest are counted.
	adminListed = 10
	// adminForget: a node silent longer is gone, not stale.
	adminForget = 28 * 24 * time.Hour
)

// AdminDigest is the cluster's week for its admins: the runs that ended
// in [From, To), and the state at the digest's time.
type AdminDigest struct {
	Week     string
	From, To time.Time
	WeekSums
	// Users and Teams are the top wasters, most idle GPU-hours first
	// (UserDigest.User names the team in Teams).
	Users, Teams []UserDigest
	// Foreign are the GPUs whose samples showed a foreign process in the
	// week; ForeignMore counts those past the list.
	Foreign     []store.ForeignGPU
	ForeignMore bool
	// Quarantined and Refused count the files the week's ingest passes
	// set aside.
	Quarantined, Refused int64
	// Stale are the nodes silent for over notify.idle.stale_after at the
	// digest's time (gone for over adminForget: not listed); StaleCount
	// all of them.
	Stale      []store.NodeLast
	StaleCount int
	Now        time.Time
	Queue      store.NotifyQueue
	// StaleAfter is the silence that makes a node stale.
	StaleAfter time.Duration
}

// adminSums gathers the week's runs for the admins' digest.
type adminSums struct {
	d            AdminDigest
	users, teams digests
}

func (a *adminSums) add(j *store.JobRow, team string) {
	a.d.WeekSums.add(j)
	a.users.add(j.User, j)
	a.teams.add(team, j)
}

// topIdle is m's entries with idle time, most idle first (by name on a
// tie), at most adminTop.
func topIdle(m digests) []UserDigest {
	idle := func(u UserDigest) float64 { return u.IdleS }
	out := slices.DeleteFunc(ranked(m, idle), func(u UserDigest) bool { return !(u.IdleS > 0) })
	return out[:min(len(out), adminTop)]
}

// adminMessages are the admins' digests of the week a gathered, one to
// each address of notify.digest.admins in the site's language.
func (n *Notifier) adminMessages(ctx context.Context, a *adminSums, now time.Time) ([]store.NotifyMessage, error) {
	d := &a.d
	d.Users, d.Teams = topIdle(a.users), topIdle(a.teams)
	d.Now, d.StaleAfter = now, n.cfg.Idle.StaleAfter.Duration
	var err error
	if d.Foreign, err = n.st.ForeignGPUs(ctx, d.From.UnixMilli(), d.To.UnixMilli(), adminListed+1); err != nil {
		return nil, err
	}
	d.ForeignMore = len(d.Foreign) > adminListed
	d.Foreign = d.Foreign[:min(len(d.Foreign), adminListed)]
	if d.Quarantined, d.Refused, err = n.st.PassCounts(ctx, d.From.Unix()); err != nil {
		return nil, fmt.Errorf("read the week's passes: %w", err)
	}
	nodes, err := n.st.NodeLastRecords(ctx)
	if err != nil {
		return nil, err
	}
	for _, nd := range nodes {
		age := now.Sub(time.Unix(nd.LastRecord, 0))
		if age <= d.StaleAfter || age > adminForget {
			continue
		}
		d.StaleCount++
		if len(d.Stale) < adminListed {
			d.Stale = append(d.Stale, nd)
		}
	}
	if d.Queue, err = n.st.NotifyQueueState(ctx); err != nil {
		return nil, err
	}
	lang := n.cfg.Language
	subject, body := renderAdminDigest(*d, lang, n.loc)
	var out []store.NotifyMessage
	for _, addr := range n.cfg.Digest.Admins {
		out = append(out, store.NotifyMessage{Key: RuleDigest + ":" + d.Week + ":admins:" + addr, Rule: RuleDigest, Recipient: addr, Channel: ChannelMail,
			Language: lang, Subject: subject, Body: body, Created: now})
	}
	return out, nil
}

// adminText is the admins' digest in one language.
type adminText struct {
	subject, subjectUnknown, hello, intro                string
	users, teams, ranked, none                           string
	foreign, foreignGPU, foreignMore, files, stale, node string
	staleMore, queue, queueOldest, footer                string
}

var adminTexts = map[string]adminText{
	"en": {
		subject:        "[gpusuite] cluster week %[1]s: %.2[2]f GPU-h, %.2[3]f GPU-h idle (%.1[4]f %%)",
		subjectUnknown: "[gpusuite] cluster week %[1]s: %.2[2]f GPU-h",
		hello:          "Hello,\n\n",
		intro:          "the cluster's jobs that ended in week %[1]s (%[2]s to %[3]s):\n\n",
		users:          "\nThe users who left GPUs idle longest:\n",
		teams:          "\nThe teams who left GPUs idle longest:\n",
		ranked:         "  %-12s %4d jobs  %9.2f GPU-h  %9.2f GPU-h idle (%.1f %%)\n",
		none:           "  none\n",
		foreign:        "\nGPUs with a process of no job that held them (foreign), in the week:\n",
		foreignGPU:     "  %s/%s GPU %s: %d samples, %s to %s\n",
		foreignMore:    "  ... and more: gpuacct board shows them while they last\n",
		files:          "\nFiles ingest set aside in the week: %d quarantined, %d refused\n",
		stale:          "\nNodes silent for over %s at %s: %d\n",
		node:           "  %s/%s: last record %s (%s ago)\n",
		staleMore:      "  ... and %d more: gpuacct check lists them all\n",
		queue:          "\nMessages: %d queued, %d sent, %d given up\n",
		queueOldest:    "  the oldest queued one has been due since %s\n",
		footer:         "\nThe week's report: gpuacct report users --start %s --end %s\n\n-- gpusuite\n",
	},
	"ja": {
		subject:        "[gpusuite] クラスタの %[1]s: %.2[2]f GPU 時間、アイドル %.2[3]f GPU 時間 (%.1[4]f %%)",
		subjectUnknown: "[gpusuite] クラスタの %[1]s: %.2[2]f GPU 時間",
		hello:          "管理者の皆さん\n\n",
		intro:          "クラスタで %[1]s (%[2]s から %[3]s) に終了したジョブ:\n\n",
		users:          "\nGPU のアイドルが長かったユーザー:\n",
		teams:          "\nGPU のアイドルが長かったチーム:\n",
		ranked:         "  %-12s %4d ジョブ  %9.2f GPU 時間  アイドル %9.2f GPU 時間 (%.1f %%)\n",
		none:           "  なし\n",
		foreign:        "\n週内に、確保したジョブ以外のプロセス (foreign) があった GPU:\n",
		foreignGPU:     "  %s/%s GPU %s: サンプル %d 件、%s から %s\n",
		foreignMore:    "  ... ほかにもあります: 現在のものは gpuacct board で見られます\n",
		files:          "\n週内に取り込みが退けたファイル: 隔離 %d 件、拒否 %d 件\n",
		stale:          "\n%[2]s の時点で %[1]s以上データの無いノード: %[3]d 台\n",
		node:           "  %s/%s: 最後の記録 %s (%s前)\n",
		staleMore:      "  ... ほか %d 台: gpuacct check ですべて見られます\n",
		queue:          "\nメッセージ: 送信待ち %d 件、送信済み %d 件、断念 %d 件\n",
		queueOldest:    "  最も古い送信待ちは %s から期限を過ぎています\n",
		footer:         "\n週の報告: gpuacct report users --start %s --end %s\n\n-- gpusuite\n",
	},
}

// renderAdminDigest is d in lang, times in loc.
func renderAdminDigest(d AdminDigest, lang string, loc *time.Location) (subject, body string) {
	tx, lang := textIn(adminTexts, lang)
	hours := float64(d.AllocS) / 3600
	if d.sampled() {
		subject = fmt.Sprintf(tx.subject, d.Week, hours, d.IdleS/3600, 100*d.IdleS/float64(d.AllocS))
	} else {
		subject = fmt.Sprintf(tx.subjectUnknown, d.Week, hours)
	}
	const stamp = "2006-01-02 15:04 MST"
	var b strings.Builder
	b.WriteString(tx.hello)
	fmt.Fprintf(&b, tx.intro, d.Week, d.From.Format("2006-01-02"), d.To.AddDate(0, 0, -1).Format("2006-01-02"))
	writeSums(&b, digestTextOf(lang), d.WeekSums)
	for _, list := range []struct {
		head string
		rows []UserDigest
	}{{tx.users, d.Users}, {tx.teams, d.Teams}} {
		b.WriteString(list.head)
		if len(list.rows) == 0 {
			b.WriteString(tx.none)
		}
		for _, u := range list.rows {
			share := 0.0
			if u.AllocS > 0 {
				share = 100 * u.IdleS / float64(u.AllocS)
			}
			fmt.Fprintf(&b, tx.ranked, u.User, u.Jobs, float64(u.AllocS)/3600, u.IdleS/3600, share)
		}
	}
	b.WriteString(tx.foreign)
	if len(d.Foreign) == 0 {
		b.WriteString(tx.none)
	}
	for _, f := range d.Foreign {
		fmt.Fprintf(&b, tx.foreignGPU, f.Cluster, f.Node, index(f.Index), f.Samples,
			time.UnixMilli(f.First).In(loc).Format(stamp), time.UnixMilli(f.Last).In(loc).Format(stamp))
	}
	if d.ForeignMore {
		b.WriteString(tx.foreignMore)
	}
	fmt.Fprintf(&b, tx.files, d.Quarantined, d.Refused)
	fmt.Fprintf(&b, tx.stale, duration(d.StaleAfter, lang), d.Now.In(loc).Format(stamp), d.StaleCount)
	for _, nd := range d.Stale {
		last := time.Unix(nd.LastRecord, 0)
		fmt.Fprintf(&b, tx.node, nd.Cluster, nd.Name, last.In(loc).Format(stamp), duration(d.Now.Sub(last), lang))
	}
	if more := d.StaleCount - len(d.Stale); more > 0 {
		fmt.Fprintf(&b, tx.staleMore, more)
	}
	fmt.Fprintf(&b, tx.queue, d.Queue.Queued, d.Queue.Sent, d.Queue.Failed)
	if d.Queue.OldestDue != nil {
		fmt.Fprintf(&b, tx.queueOldest, d.Queue.OldestDue.In(loc).Format(stamp))
	}
	fmt.Fprintf(&b, tx.footer, d.From.Format("2006-01-02"), d.To.Format("2006-01-02"))
	return subject, b.String()
}
