package config

import (
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Notify configures the notifier that gpuacct serve runs beside ingest
// and gpuacct notify --once runs from cron: rules over the ledger, each
// message kept in the ledger before it is sent (docs/notify.md).
type Notify struct {
	// Enabled makes gpuacct serve evaluate the rules and deliver every
	// Interval.
	Enabled  bool     `toml:"enabled"`
	Interval Duration `toml:"interval"`
	// DryRun logs what the rules would send and keeps nothing.
	DryRun bool `toml:"dry_run"`
	// Language is the site's language of messages (en, ja); Languages
	// sets it per user.
	Language  string            `toml:"language"`
	Languages map[string]string `toml:"languages"`
	// MaxAttempts bounds the deliveries of one message; past it the
	// message is given up (state failed) with the last reason.
	MaxAttempts int `toml:"max_attempts"`
	// RetryMin and RetryMax bound the backoff between attempts, doubled
	// after each.
	RetryMin Duration `toml:"retry_min"`
	RetryMax Duration `toml:"retry_max"`
	// RatePerHour bounds the messages sent to one recipient in an hour;
	// the rest wait, queued.
	RatePerHour int                      `toml:"rate_per_hour"`
	Mail        NotifyMail               `toml:"mail"`
	Webhooks    map[string]NotifyWebhook `toml:"webhooks"`
	Idle        NotifyIdle               `toml:"idle"`
	Digest      NotifyDigest             `toml:"digest"`
}

// NotifyDigest is the weekly digest: each user gets their jobs of the
// week before, once, in the first pass of a week (report.tz).
type NotifyDigest struct {
	Enabled bool `toml:"enabled"`
	// Leads names each team's leads (team as reports name it: the Slurm
	// account, or report.teams' team): each gets the team's digest.
	Leads map[string][]string `toml:"leads"`
	// Admins are mail addresses that each get the cluster's digest: its
	// idle GPU-hours, the top wasting users and teams, foreign processes,
	// quarantined files, stale nodes and the message queue.
	Admins []string `toml:"admins"`
	// Advice adds to each user's digest what their week's runs suggest.
	Advice NotifyAdvice `toml:"advice"`
}

// NotifyAdvice is the advice section of a user's weekly digest, from the
// runs that ended in the week (each run advised on once: it ends in one
// week).
type NotifyAdvice struct {
	Enabled bool `toml:"enabled"`
	// SmallUtil: a one-GPU run under this utilization (percent) whose
	// GPU memory peak fits the GPU's smallest MIG slice is told so.
	SmallUtil float64 `toml:"small_util"`
	// OneGPUIdle: a run of several GPUs whose GPUs but one were each
	// idle at least this share (percent) of their sampled time is told
	// it used one.
	OneGPUIdle float64 `toml:"one_gpu_idle"`
	// LimitRatio and LimitRuns: a user with at least LimitRuns runs in
	// the week whose time limit was over LimitRatio times their elapsed
	// time is told to ask for less.
	LimitRatio float64 `toml:"limit_ratio"`
	LimitRuns  int     `toml:"limit_runs"`
}

// NotifyMail is the SMTP server and the users' addresses.
type NotifyMail struct {
	Host string `toml:"host"`
	Port int    `toml:"port"`
	// StartTLS is auto (when offered), always or never.
	StartTLS string `toml:"starttls"`
	// User logs in (AUTH PLAIN) with the password in PasswordFile.
	User         string `toml:"user"`
	PasswordFile string `toml:"password_file"`
	From         string `toml:"from"`
	// Address makes a user's address: {user} is the Slurm user name.
	Address string `toml:"address"`
	// AddressesFile maps users to addresses, "user address" a line; it
	// wins over Address.
	AddressesFile string   `toml:"addresses_file"`
	Timeout       Duration `toml:"timeout"`
}

// NotifyWebhook is one incoming webhook (Slack, Mattermost or any JSON).
type NotifyWebhook struct {
	URL string `toml:"url"`
	// Format is slack ({"text": ...}) or json.
	Format  string   `toml:"format"`
	Timeout Duration `toml:"timeout"`
}

// NotifyIdle is the idle-GPU rule: a running job's GPU idle for
// IdleAfter gets its owner one mail.
type NotifyIdle struct {
	Enabled   bool     `toml:"enabled"`
	IdleAfter Duration `toml:"idle_after"`
	// StaleAfter: a GPU whose newest sample is older says nothing (its
	// agent or node is down), and is not called idle.
	StaleAfter Duration `toml:"stale_after"`
	// Webhook, when set, names a webhook that gets each warning too.
	Webhook          string   `toml:"webhook"`
	ExemptUsers      []string `toml:"exempt_users"`
	ExemptAccounts   []string `toml:"exempt_accounts"`
	ExemptPartitions []string `toml:"exempt_partitions"`
	// ExemptQOS exempts jobs of a Slurm QOS (as sacct names it).
	ExemptQOS []string `toml:"exempt_qos"`
	// ExemptComment exempts a job whose Slurm comment holds it.
	ExemptComment string `toml:"exempt_comment"`
	// CancelAfter, when not 0, cancels a job whose GPUs all stay idle
	// this long after the idle warning went: a final warning first, then
	// scancel FinalWarning after it went. 0 (the default): never.
	CancelAfter  Duration `toml:"cancel_after"`
	FinalWarning Duration `toml:"final_warning"`
}

// NotifyLanguages are the languages messages are written in.
var NotifyLanguages = []string{"en", "ja"}

func defaultNotify() Notify {
	return Notify{
		Interval: Dur(5 * time.Minute), Language: "en", MaxAttempts: 10,
		RetryMin: Dur(time.Minute), RetryMax: Dur(6 * time.Hour), RatePerHour: 20,
		Mail:   NotifyMail{Host: "localhost", Port: 25, StartTLS: "auto", From: "gpusuite@localhost", Timeout: Dur(30 * time.Second)},
		Digest: NotifyDigest{Advice: NotifyAdvice{Enabled: true, SmallUtil: 30, OneGPUIdle: 90, LimitRatio: 4, LimitRuns: 3}},
		Idle: NotifyIdle{Enabled: true, IdleAfter: Dur(time.Hour), StaleAfter: Dur(15 * time.Minute), ExemptComment: "gpuacct:noidlemail",
			FinalWarning: Dur(15 * time.Minute)},
	}
}

func (n *Notify) validate() error {
	if d := n.Interval.Duration; d < 10*time.Second || d > 24*time.Hour {
		return fmt.Errorf("key \"notify.interval\": %s is outside 10s..24h", d)
	}
	if err := notifyLanguage("notify.language", n.Language); err != nil {
		return err
	}
	for _, u := range slices.Sorted(maps.Keys(n.Languages)) {
		if err := notifyLanguage("notify.languages."+u, n.Languages[u]); err != nil {
			return err
		}
	}
	if n.MaxAttempts < 1 || n.MaxAttempts > 100 {
		return fmt.Errorf("key \"notify.max_attempts\": %d is outside 1..100", n.MaxAttempts)
	}
	if n.RetryMin.Duration <= 0 {
		return fmt.Errorf("key \"notify.retry_min\": %s is not above 0s", n.RetryMin.Duration)
	}
	if n.RetryMax.Duration < n.RetryMin.Duration || n.RetryMax.Duration > 7*24*time.Hour {
		return fmt.Errorf("key \"notify.retry_max\": %s is outside notify.retry_min..168h", n.RetryMax.Duration)
	}
	if n.RatePerHour < 1 {
		return fmt.Errorf("key \"notify.rate_per_hour\": %d is not above 0", n.RatePerHour)
	}
	if err := n.Mail.validate(); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(n.Webhooks)) {
		if err := n.Webhooks[name].validate("notify.webhooks." + name); err != nil {
			return err
		}
	}
	if err := n.Digest.validate(); err != nil {
		return err
	}
	return n.Idle.validate(n.Webhooks)
}

func (d *NotifyDigest) validate() error {
	for _, a := range d.Admins {
		if addr, err := mail.ParseAddress(a); err != nil || addr.Name != "" {
			return fmt.Errorf("key \"notify.digest.admins\": %q is not a mail address", a)
		}
	}
	a := d.Advice
	for _, p := range []struct {
		key      string
		v, lo, h float64
	}{{"small_util", a.SmallUtil, 1, 100}, {"one_gpu_idle", a.OneGPUIdle, 50, 100}, {"limit_ratio", a.LimitRatio, 1.5, 1000}, {"limit_runs", float64(a.LimitRuns), 1, 1000}} {
		if p.v < p.lo || p.v > p.h {
			return fmt.Errorf("key \"notify.digest.advice.%s\": %g is outside %g..%g", p.key, p.v, p.lo, p.h)
		}
	}
	return nil
}

func notifyLanguage(key, lang string) error {
	for _, l := range NotifyLanguages {
		if lang == l {
			return nil
		}
	}
	return fmt.Errorf("key %q: %q is not one of %s", key, lang, strings.Join(NotifyLanguages, ", "))
}

func (m *NotifyMail) validate() error {
	if m.Host == "" {
		return fmt.Errorf("key \"notify.mail.host\": must not be empty")
	}
	if m.Port < 1 || m.Port > 65535 {
		return fmt.Errorf("key \"notify.mail.port\": %d is outside 1..65535", m.Port)
	}
	switch m.StartTLS {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("key \"notify.mail.starttls\": %q is not auto, always or never", m.StartTLS)
	}
	if _, err := mail.ParseAddress(m.From); err != nil {
		return fmt.Errorf("key \"notify.mail.from\": %q is not a mail address", m.From)
	}
	if m.Address != "" {
		if !strings.Contains(m.Address, "{user}") {
			return fmt.Errorf("key \"notify.mail.address\": %q does not hold {user}", m.Address)
		}
		if _, err := mail.ParseAddress(strings.ReplaceAll(m.Address, "{user}", "user")); err != nil {
			return fmt.Errorf("key \"notify.mail.address\": %q does not make a mail address", m.Address)
		}
	}
	for key, p := range map[string]string{"notify.mail.password_file": m.PasswordFile, "notify.mail.addresses_file": m.AddressesFile} {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("key %q: %q is not an absolute path", key, p)
		}
	}
	if (m.User == "") != (m.PasswordFile == "") {
		return fmt.Errorf("key \"notify.mail.user\": user and password_file go together")
	}
	if d := m.Timeout.Duration; d <= 0 || d > 5*time.Minute {
		return fmt.Errorf("key \"notify.mail.timeout\": %s is outside 0s..5m", d)
	}
	return nil
}

func (w NotifyWebhook) validate(key string) error {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		// The URL is a secret: the error names the key, not the value.
		return fmt.Errorf("key %q: not an http or https URL", key+".url")
	}
	switch w.Format {
	case "slack", "json":
	default:
		return fmt.Errorf("key %q: %q is not slack or json", key+".format", w.Format)
	}
	if d := w.Timeout.Duration; d < 0 || d > 5*time.Minute {
		return fmt.Errorf("key %q: %s is outside 0s..5m", key+".timeout", d)
	}
	return nil
}

func (i *NotifyIdle) validate(webhooks map[string]NotifyWebhook) error {
	if d := i.IdleAfter.Duration; d < 5*time.Minute || d > 30*24*time.Hour {
		return fmt.Errorf("key \"notify.idle.idle_after\": %s is outside 5m..720h", d)
	}
	if d := i.StaleAfter.Duration; d < time.Minute || d > 24*time.Hour {
		return fmt.Errorf("key \"notify.idle.stale_after\": %s is outside 1m..24h", d)
	}
	if d := i.CancelAfter.Duration; d != 0 && (d < 10*time.Minute || d > 30*24*time.Hour) {
		return fmt.Errorf("key \"notify.idle.cancel_after\": %s is neither 0s (off) nor within 10m..720h", d)
	}
	if d := i.FinalWarning.Duration; d < 0 || d > 24*time.Hour {
		return fmt.Errorf("key \"notify.idle.final_warning\": %s is outside 0s..24h", d)
	}
	if _, ok := webhooks[i.Webhook]; i.Webhook != "" && !ok {
		return fmt.Errorf("key \"notify.idle.webhook\": no [notify.webhooks.%s]", i.Webhook)
	}
	return nil
}
