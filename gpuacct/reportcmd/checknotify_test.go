package reportcmd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestCheckNotifyQueue: check says how many messages wait and since when,
// and fails only once the oldest has waited past its time longer than
// the stuck threshold; an empty queue adds nothing.
func TestCheckNotifyQueue(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	due := func(ago time.Duration) []store.NotifyMessage {
		return []store.NotifyMessage{{Key: "k", Rule: "idle", Recipient: "alice@example.org", Channel: "mail", User: "alice",
			Subject: "s", Body: "b", Created: now.Add(-ago - time.Minute), Attempts: 1, LastError: "dial tcp 127.0.0.1:25: connection refused",
			NextAttempt: now.Add(-ago)}}
	}
	for _, tt := range []struct {
		name     string
		msgs     []store.NotifyMessage
		wantLine string // "": check says nothing of the notifier
		critical bool
	}{
		{name: "empty", wantLine: ""},
		{name: "waiting", msgs: due(-10 * time.Minute), wantLine: "; notify queue: 1 queued, next due in 10m0s"},
		{name: "due", msgs: due(10 * time.Minute), wantLine: "; notify queue: 1 queued, oldest due 10m0s ago"},
		{name: "stuck", msgs: due(2 * time.Hour), critical: true,
			wantLine: "CRITICAL: notify: a queued message has waited 2h0m0s past its time (limit 1h0m0s): the mail server or a webhook refuses or does not answer; 'gpuacct notify list' shows the last error\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := buildLedger(t, []fxJob{{ID: 1, User: "alice", Acct: "x", Part: "gpu", Node: "gpu01", GPUs: 1, Start: now.Unix() - 600, End: now.Unix() - 60}}, now)
			st, err := openWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			err = st.RecordPass(context.Background(), store.Pass{Started: now.Add(-120 * time.Second), Finished: now.Add(-119 * time.Second), OK: true})
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			seedOutbox(t, path, now, tt.msgs)
			d, out, _ := testDeps(now, nil)
			err = run(t, d, "check", "--no-live", dbOpt(path), "--stale", "2h")
			var ee *cliwire.ExitError
			if got := errors.As(err, &ee) && ee.Code == checkCritical; got != tt.critical || (!tt.critical && err != nil) {
				t.Errorf("check: %v, want critical %v\n%s", err, tt.critical, out)
			}
			if tt.wantLine == "" {
				if strings.Contains(out.String(), "notify") {
					t.Errorf("an empty queue shows in check:\n%s", out)
				}
				return
			}
			if !strings.Contains(out.String(), tt.wantLine) {
				t.Errorf("check printed\n%s\nwant it to hold %q", out, tt.wantLine)
			}
		})
	}
}
