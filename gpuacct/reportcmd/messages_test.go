package reportcmd

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// seedOutbox keeps msgs in the ledger at path as the notifier's writer
// does, then applies each one's outcome: sent at its SentAt, or failed
// with its LastError (given up when its State is failed, else due again
// at its NextAttempt), after its Attempts.
func seedOutbox(t *testing.T, path string, now time.Time, msgs []store.NotifyMessage) {
	t.Helper()
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		id, _, err := b.EnqueueNotify(m)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.SentAt != nil:
			err = b.MarkNotifySent(id, *m.SentAt)
		case m.LastError != "":
			err = b.MarkNotifyFailed(id, m.LastError, m.NextAttempt, m.State == store.NotifyFailed)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	// A claim counts one attempt of every message due: the counts are
	// set here, each its own.
	for _, m := range msgs {
		ledgerdb.Exec(t, path, `UPDATE notify_messages SET attempts = ? WHERE key = ?`, m.Attempts, m.Key)
	}
}

// TestJobMessages: gpuacct job shows the messages kept about the run,
// in text and JSON (golden files, testdata/messages, -update), and none
// of another run or job; a job without messages prints exactly what it
// printed before any message was kept.
func TestJobMessages(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 7200},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 9, User: "carol", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0 + 3600, End: t0 + 7200},
	}, now)
	job := func(args ...string) string {
		t.Helper()
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, append([]string{"job", dbOpt(path), "--tz", "UTC"}, args...)...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	beforeText, beforeJSON := job("9"), job("9", "--json")
	at := func(s int64) time.Time { return time.Unix(t0+s, 0).UTC() }
	ptr := func(t time.Time) *time.Time { return &t }
	id := func(n int64) *int64 { return &n }
	seedOutbox(t, path, now, []store.NotifyMessage{
		{Key: "idle/c1/7/alice", Rule: "idle", Recipient: "alice@example.org", Channel: "mail", Cluster: "c1", Job: id(7), User: "alice",
			Subject: "idle", Body: "b", Created: at(3600), Attempts: 1, SentAt: ptr(at(3605))},
		{Key: "idle/c1/7/team", Rule: "idle", Recipient: "vision-team", Channel: "webhook", Cluster: "c1", Job: id(7), User: "alice",
			Subject: "idle", Body: "b", Created: at(3600), Attempts: 2, LastError: "HTTP 500 from the webhook", NextAttempt: at(4200)},
		{Key: "cancel/c1/7/alice", Rule: "cancel", Recipient: "alice@example.org", Channel: "mail", Cluster: "c1", Job: id(7), User: "alice",
			Subject: "cancel", Body: "b", Created: at(5400), Attempts: 5, State: store.NotifyFailed,
			LastError: "550 5.1.1 <alice@example.org>: no such user\nsecond line", NextAttempt: at(6000)},
		{Key: "idle/c1/7+1/alice", Rule: "idle", Recipient: "alice@example.org", Channel: "mail", Cluster: "c1", Job: id(7), Restart: 1, User: "alice",
			Subject: "idle", Body: "b", Created: at(3700)},
		{Key: "idle/c1/8/bob", Rule: "idle", Recipient: "bob@example.org", Channel: "mail", Cluster: "c1", Job: id(8), User: "bob",
			Subject: "idle", Body: "b", Created: at(3700)},
		{Key: "digest/alice", Rule: "digest", Recipient: "alice@example.org", Channel: "mail", User: "alice", Subject: "digest", Body: "b", Created: at(3800)},
	})
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"job7.txt", []string{"7"}},
		{"job7.json", []string{"7", "--json"}},
		{"job8.txt", []string{"8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, filepath.Join("testdata", "messages", tt.name), job(tt.args...))
		})
	}
	t.Run("none", func(t *testing.T) {
		if diff := cmp.Diff(beforeText, job("9")); diff != "" {
			t.Errorf("job 9's text changed (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(beforeJSON, job("9", "--json")); diff != "" {
			t.Errorf("job 9's JSON changed (-before +after):\n%s", diff)
		}
	})
}
