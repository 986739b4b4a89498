package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestJobMessages: the job's page and its JSON show the notifier's
// messages about the run; under web.private_data the recipients (and
// an address in a failure's reason) are shown only to the job's owner
// and admins, and a job without messages shows no section or key.
func TestJobMessages(t *testing.T) {
	t0 := reportfixture.T0
	now := time.Unix(t0+86400, 0)
	db := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
	}, now)
	st, err := store.Open(context.Background(), store.At(db))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	job := int64(7)
	sent, _, err := b.EnqueueNotify(store.NotifyMessage{Key: "idle/7", Rule: "idle", Recipient: "alice@example.org", Channel: "mail", Cluster: "c1",
		Job: &job, User: "alice", Subject: "s", Body: "b", Created: time.Unix(t0+1800, 0)})
	var failed int64
	if err == nil {
		failed, _, err = b.EnqueueNotify(store.NotifyMessage{Key: "cancel/7", Rule: "cancel", Recipient: "alice@example.org", Channel: "mail", Cluster: "c1",
			Job: &job, User: "alice", Subject: "s", Body: "b", Created: time.Unix(t0+2400, 0)})
	}
	if err == nil {
		_, err = b.ClaimNotify(time.Unix(t0+2400, 0), time.Minute, 10)
	}
	if err == nil {
		err = b.MarkNotifySent(sent, time.Unix(t0+1805, 0))
	}
	if err == nil {
		err = b.MarkNotifyFailed(failed, "550 <alice@example.org>: no such user", time.Unix(t0+3000, 0), true)
	}
	if err == nil {
		err = b.Commit()
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, PrivateData: true, Admins: []string{"boss"},
		UserHeader: "X-Remote-User"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	get := func(t *testing.T, path, user string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Remote-User", user)
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s as %s: %d %.300s", path, user, resp.StatusCode, body)
		}
		return string(body)
	}
	type msg struct{ Rule, Recipient, State, Error string }
	for _, tt := range []struct {
		viewer, to string
	}{
		{"alice", "alice@example.org"},
		{"boss", "alice@example.org"},
		{"bob", "(hidden)"},
	} {
		t.Run(tt.viewer, func(t *testing.T) {
			var doc struct {
				Messages []msg `json:"messages"`
			}
			if err := json.Unmarshal([]byte(get(t, "/api/v1/jobs/c1/7", tt.viewer)), &doc); err != nil {
				t.Fatal(err)
			}
			want := []msg{{Rule: "idle", Recipient: tt.to, State: "sent"},
				{Rule: "cancel", Recipient: tt.to, State: "failed", Error: "550 <" + tt.to + ">: no such user"}}
			if diff := cmp.Diff(want, doc.Messages); diff != "" {
				t.Errorf("job 7's messages as %s (-want +got):\n%s", tt.viewer, diff)
			}
			page := get(t, "/job/c1/7", tt.viewer)
			for _, w := range []string{`id="messages"`, "<td>idle</td><td>mail</td><td>" + tt.to + "</td><td>sent 2026-01-01 00:30:05</td>",
				"failed after 1 attempt: 550 &lt;" + tt.to + "&gt;: no such user"} {
				if !strings.Contains(page, w) {
					t.Errorf("job 7's page as %s lacks %q", tt.viewer, w)
				}
			}
			if tt.to != "alice@example.org" && strings.Contains(page, "alice@example.org") {
				t.Errorf("job 7's page shows alice's address to %s", tt.viewer)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		if page := get(t, "/job/c1/8", "bob"); strings.Contains(page, `id="messages"`) {
			t.Errorf("job 8 has no messages, its page shows a section")
		}
		if body := get(t, "/api/v1/jobs/c1/8", "bob"); strings.Contains(body, `"messages"`) {
			t.Errorf("job 8 has no messages, its JSON has the key:\n%s", body)
		}
	})
}
