package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNotifySection(t *testing.T) {
	set := defaultNotify()
	set.Enabled, set.Language, set.Languages = true, "ja", map[string]string{"alice": "en"}
	set.Mail.Host, set.Mail.Address = "mail.example.org", "{user}@example.org"
	set.Webhooks = map[string]NotifyWebhook{"ops": {URL: "https://chat.example.org/hooks/x", Format: "slack"}}
	set.Idle.IdleAfter, set.Idle.Webhook, set.Idle.ExemptAccounts = Dur(2*time.Hour), "ops", []string{"bench"}
	set.Idle.ExemptQOS = []string{"long"}
	set.Digest.Admins = []string{"ops@example.org"}
	tests := []struct {
		name    string
		toml    string
		want    Notify
		wantErr string
	}{
		{"defaults", "", defaultNotify(), ""},
		{"set", `[notify]
enabled = true
language = "ja"
languages = { alice = "en" }
[notify.mail]
host = "mail.example.org"
address = "{user}@example.org"
[notify.webhooks.ops]
url = "https://chat.example.org/hooks/x"
format = "slack"
[notify.idle]
idle_after = "2h"
webhook = "ops"
exempt_accounts = ["bench"]
exempt_qos = ["long"]
[notify.digest]
admins = ["ops@example.org"]
`, set, ""},
		{"unknown rule", "[notify.idel]\nidle_after = \"1h\"\n", Notify{}, `line 1: unknown key "notify.idel"`},
		{"threshold 0", "[notify.idle]\nidle_after = \"0s\"\n", Notify{}, `key "notify.idle.idle_after": 0s is outside 5m..720h`},
		{"bad from", "[notify.mail]\nfrom = \"gpusuite at example\"\n", Notify{}, `key "notify.mail.from": "gpusuite at example" is not a mail address`},
		{"address without user", "[notify.mail]\naddress = \"ops@example.org\"\n", Notify{}, `key "notify.mail.address": "ops@example.org" does not hold {user}`},
		{"bad address", "[notify.mail]\naddress = \"{user} at example\"\n", Notify{}, `key "notify.mail.address"`},
		{"language", "[notify]\nlanguage = \"de\"\n", Notify{}, `key "notify.language": "de" is not one of en, ja`},
		{"user language", "[notify]\nlanguages = { bob = \"fr\" }\n", Notify{}, `key "notify.languages.bob"`},
		{"webhook url", "[notify.webhooks.ops]\nurl = \"ftp://x/secret\"\nformat = \"json\"\n", Notify{}, `key "notify.webhooks.ops.url": not an http or https URL`},
		{"webhook format", "[notify.webhooks.ops]\nurl = \"https://x/y\"\nformat = \"teams\"\n", Notify{}, `key "notify.webhooks.ops.format"`},
		{"unknown webhook", "[notify.idle]\nwebhook = \"ops\"\n", Notify{}, `key "notify.idle.webhook": no [notify.webhooks.ops]`},
		{"starttls", "[notify.mail]\nstarttls = \"yes\"\n", Notify{}, `key "notify.mail.starttls"`},
		{"user without password", "[notify.mail]\nuser = \"gpusuite\"\n", Notify{}, `key "notify.mail.user"`},
		{"relative password file", "[notify.mail]\nuser = \"u\"\npassword_file = \"pw\"\n", Notify{}, `key "notify.mail.password_file"`},
		{"attempts", "[notify]\nmax_attempts = 0\n", Notify{}, `key "notify.max_attempts"`},
		{"retry", "[notify]\nretry_min = \"2h\"\nretry_max = \"1h\"\n", Notify{}, `key "notify.retry_max"`},
		{"rate", "[notify]\nrate_per_hour = 0\n", Notify{}, `key "notify.rate_per_hour"`},
		{"bad admin address", "[notify.digest]\nadmins = [\"ops@example.org\", \"root at example\"]\n", Notify{}, `key "notify.digest.admins": "root at example" is not a mail address`},
		{"advice threshold 0", "[notify.digest.advice]\nsmall_util = 0\n", Notify{}, `key "notify.digest.advice.small_util": 0 is outside 1..100`},
		{"advice ratio", "[notify.digest.advice]\nlimit_ratio = 1\n", Notify{}, `key "notify.digest.advice.limit_ratio"`},
		{"advice runs", "[notify.digest.advice]\nlimit_runs = 0\n", Notify{}, `key "notify.digest.advice.limit_runs"`},
		{"advice idle share", "[notify.digest.advice]\none_gpu_idle = 101\n", Notify{}, `key "notify.digest.advice.one_gpu_idle"`},
		{"unknown advice key", "[notify.digest.advice]\nsmall = 10\n", Notify{}, `unknown key "notify.digest.advice.small"`},
		{"admin address with a name", "[notify.digest]\nadmins = [\"Ops <ops@example.org>\"]\n", Notify{}, `key "notify.digest.admins"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ok := parsed(t, tt.toml, tt.wantErr)
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, cfg.Notify); diff != "" {
				t.Errorf("notify (-want +got):\n%s", diff)
			}
		})
	}
}
