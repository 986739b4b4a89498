package notify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// digestUsers is how many of a team's users its digest ranks.
const digestUsers = 10

// TeamDigest is one team's week for its leads: the runs of the team that
// ended in [From, To), by user.
type TeamDigest struct {
	Team, Week string
	From, To   time.Time
	WeekSums
	// Users are the team's users, most GPU-hours first.
	Users []UserDigest
	users digests
}

func (d *TeamDigest) add(j *store.JobRow) {
	d.WeekSums.add(j)
	d.users.add(j.User, j)
}

// ranked fills Users from the users added, most GPU-hours first, at most
// digestUsers.
func (d *TeamDigest) ranked() {
	d.Users = ranked(d.users, func(u UserDigest) int64 { return u.AllocS })
	d.Users = d.Users[:min(len(d.Users), digestUsers)]
}

// leadMessages are the team digests of byTeam to each team's leads
// (notify.digest.leads), unless a lead opted out.
func (n *Notifier) leadMessages(ctx context.Context, byTeam map[string]*TeamDigest, now time.Time) ([]store.NotifyMessage, error) {
	var out []store.NotifyMessage
	for _, team := range slices.Sorted(maps.Keys(byTeam)) {
		d := byTeam[team]
		d.ranked()
		for _, lead := range n.cfg.Digest.Leads[team] {
			off, err := optedOut(ctx, n.st, lead, RuleDigest)
			if err != nil {
				return nil, err
			}
			if off {
				continue
			}
			lang := n.language(lead)
			subject, body := renderTeamDigest(*d, lead, lang)
			out = append(out, store.NotifyMessage{Key: RuleDigest + ":" + d.Week + ":team:" + team + ":lead:" + lead, Rule: RuleDigest,
				Recipient: n.address(lead), Channel: ChannelMail, Language: lang, User: lead, Subject: subject, Body: body, Created: now})
		}
	}
	return out, nil
}

// teamText is the team digest in one language.
type teamText struct {
	subject, subjectUnknown, hello, intro, users, user, footer string
}

var teamTexts = map[string]teamText{
	"en": {
		subject:        "[gpusuite] team %[1]s, week %[2]s: %.2[3]f GPU-h, %.1[4]f %% used",
		subjectUnknown: "[gpusuite] team %[1]s, week %[2]s: %.2[3]f GPU-h",
		hello:          "Hello %s,\n\n",
		intro:          "the jobs of team %[1]s that ended in week %[2]s (%[3]s to %[4]s):\n\n",
		users:          "\nIts users, most GPU-hours first:\n",
		user:           "  %-12s %4d jobs  %9.2f GPU-h  %6s used  %9.2f GPU-h idle\n",
		footer: "\nThe team's report: gpuacct report users --teams %s --start %s --end %s\n" +
			"To get no more of these mails:\n    gpuacct notify off --rule digest\n\n-- gpusuite\n",
	},
	"ja": {
		subject:        "[gpusuite] チーム %[1]s の %[2]s: %.2[3]f GPU 時間、使用率 %.1[4]f %%",
		subjectUnknown: "[gpusuite] チーム %[1]s の %[2]s: %.2[3]f GPU 時間",
		hello:          "%s さん\n\n",
		intro:          "チーム %[1]s の %[2]s (%[3]s から %[4]s) に終了したジョブ:\n\n",
		users:          "\nユーザー (GPU 時間の多い順):\n",
		user:           "  %-12s %4d ジョブ  %9.2f GPU 時間  使用率 %6s  アイドル %9.2f GPU 時間\n",
		footer: "\nチームの報告: gpuacct report users --teams %s --start %s --end %s\n" +
			"このメールが不要なら:\n    gpuacct notify off --rule digest\n\n-- gpusuite\n",
	},
}

// renderTeamDigest is d for lead in lang.
func renderTeamDigest(d TeamDigest, lead, lang string) (subject, body string) {
	tx, lang := textIn(teamTexts, lang)
	sums := digestTextOf(lang)
	hours := float64(d.AllocS) / 3600
	if d.sampled() {
		subject = fmt.Sprintf(tx.subject, d.Team, d.Week, hours, 100*d.UsedS/float64(d.AllocS))
	} else {
		subject = fmt.Sprintf(tx.subjectUnknown, d.Team, d.Week, hours)
	}
	var b strings.Builder
	fmt.Fprintf(&b, tx.hello, lead)
	last := d.To.AddDate(0, 0, -1).Format("2006-01-02")
	fmt.Fprintf(&b, tx.intro, d.Team, d.Week, d.From.Format("2006-01-02"), last)
	writeSums(&b, sums, d.WeekSums)
	if len(d.Users) > 0 {
		b.WriteString(tx.users)
		for _, u := range d.Users {
			used := "?"
			if u.sampled() {
				used = fmt.Sprintf("%.1f %%", 100*u.UsedS/float64(u.AllocS))
			}
			fmt.Fprintf(&b, tx.user, u.User, u.Jobs, float64(u.AllocS)/3600, used, u.IdleS/3600)
		}
	}
	fmt.Fprintf(&b, tx.footer, d.Team, d.From.Format("2006-01-02"), d.To.Format("2006-01-02"))
	return subject, b.String()
}
