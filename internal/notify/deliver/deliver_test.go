package deliver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

// server is s's sink as an SMTP to send through.
func server(t *testing.T, addr string) SMTP {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return SMTP{Host: host, Port: p, From: "gpusuite@cluster.example.org", Timeout: 30 * time.Second}
}

// TestSMTPDelivers: a real SMTP server receives each message with its
// recipient, subject and body intact, English as 7-bit text and Japanese
// as UTF-8 (an encoded subject, a base64 body).
func TestSMTPDelivers(t *testing.T) {
	sink := smtpsink.Shared(t)
	s := server(t, sink.Addr)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, tc := range []struct {
		name, subject, body, encoding string
	}{
		{"english", "[gpusuite] job 4242: 2 GPUs idle for 1 h 5 min", "Job 4242 holds 2 GPUs.\n.a line with a dot\nscancel 4242\n", "7bit"},
		{"japanese", "[gpusuite] ジョブ 4242: GPU 2 基が 1 時間 5 分アイドル", "ジョブ 4242 は GPU を 2 基確保しています。\nscancel 4242\n", "base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := tc.name + "-" + stamp + "@example.org"
			err := s.Send(context.Background(), Mail{To: to, Subject: tc.subject, Body: tc.body, MessageID: "idle-4242-" + stamp + "@gpusuite", Date: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			got := sink.To(t, to, 1)
			if len(got) != 1 {
				t.Fatalf("%d messages to %s, want 1", len(got), to)
			}
			m := got[0]
			if diff := cmp.Diff([]string{tc.subject, tc.body, "text/plain; charset=utf-8", tc.encoding, "<idle-4242-" + stamp + "@gpusuite>", "gpusuite@cluster.example.org"},
				[]string{m.Subject, strings.ReplaceAll(m.Body, "\r\n", "\n"), m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Header.Get("Message-ID"), m.Header.Get("From")}); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSMTPTLSAndAuth: against a real server that offers STARTTLS and
// AUTH PLAIN, mail goes over TLS with the login; a wrong password, a
// login the server does not offer or TLS it does not offer are failures
// of the site's setup, worth another try once it is mended.
func TestSMTPTLSAndAuth(t *testing.T) {
	secure := smtpsink.StartWith(t, "", smtpsink.Options{TLS: true, User: "gpusuite", Password: "s3cret"})
	plain := smtpsink.Start(t, "")
	for _, tc := range []struct {
		name       string
		sink       *smtpsink.Sink
		mode, user string
		password   string
		wantErr    string
		login      string
	}{
		{"tls and login", secure, TLSAuto, "gpusuite", "s3cret", "", "gpusuite"},
		{"tls, no login", secure, TLSAlways, "", "", "", ""},
		{"wrong password", secure, TLSAuto, "gpusuite", "guess", "at AUTH: 535", ""},
		{"tls refused", secure, TLSNever, "", "", "at MAIL FROM: 530", ""},
		{"no tls offered", plain, TLSAlways, "", "", "offers no STARTTLS", ""},
		{"no login offered", plain, TLSAuto, "gpusuite", "s3cret", "offers no AUTH", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := server(t, tc.sink.Addr)
			s.StartTLS, s.User, s.Password = tc.mode, tc.user, tc.password
			s.TLS = &tls.Config{RootCAs: tc.sink.Roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
			to := strings.NewReplacer(" ", "-", ",", "").Replace(tc.name) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.org"
			err := s.Send(context.Background(), Mail{To: to, Subject: "s", Body: "b\n"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || IsPermanent(err) {
					t.Fatalf("error %v, want a temporary one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := tc.sink.To(t, to, 1)
			if len(got) != 1 {
				t.Fatalf("%d messages to %s, want 1", len(got), to)
			}
			if diff := cmp.Diff([]string{"yes", tc.login}, []string{got[0].Header.Get("X-TLS"), got[0].Header.Get("X-Login")}); diff != "" {
				t.Errorf("TLS and login (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSMTPDown: a server that does not answer is a failure worth another
// try, within the delivery's bound.
func TestSMTPDown(t *testing.T) {
	s := server(t, smtpsink.FreeAddr(t))
	err := s.Send(context.Background(), Mail{To: "a@example.org", Subject: "s", Body: "b"})
	if err == nil || IsPermanent(err) {
		t.Fatalf("error %v, want a temporary one", err)
	}
}

// TestWebhook: a real loopback HTTP server gets the post in each format;
// its 500 is worth another try, its 400 is not, 429 is.
func TestWebhook(t *testing.T) {
	var mu sync.Mutex
	var status []int
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(b))
		code := status[0]
		status = status[1:]
		w.WriteHeader(code)
	}))
	defer srv.Close()
	job := int64(4242)
	p := Post{Key: "idle:c:4242+0:alice", Rule: "idle", Cluster: "c", Job: &job, User: "alice", Subject: "job 4242 idle", Body: "2 GPUs idle for 1 h"}
	for _, tc := range []struct {
		name, format string
		code         int
		wantErr      bool
		permanent    bool
		want         string
	}{
		{"slack", FormatSlack, 200, false, false, `{"text":"job 4242 idle\n\n2 GPUs idle for 1 h"}`},
		{"json", FormatJSON, 204, false, false, `{"key":"idle:c:4242+0:alice","rule":"idle","cluster":"c","job":4242,"user":"alice","subject":"job 4242 idle","body":"2 GPUs idle for 1 h"}`},
		{"server error", FormatSlack, 500, true, false, ""},
		{"rate limited", FormatSlack, 429, true, false, ""},
		{"bad request", FormatSlack, 400, true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			status, bodies = []int{tc.code}, nil
			mu.Unlock()
			err := Webhook{URL: srv.URL + "/hooks/secret-token", Format: tc.format, Timeout: 30 * time.Second}.Send(context.Background(), p)
			if (err != nil) != tc.wantErr || IsPermanent(err) != tc.permanent {
				t.Fatalf("error %v, want error %v, permanent %v", err, tc.wantErr, tc.permanent)
			}
			if tc.want == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			var want, got any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if len(bodies) != 1 || json.Unmarshal([]byte(bodies[0]), &got) != nil {
				t.Fatalf("posts %q, want one JSON post", bodies)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("post (-want +got):\n%s", diff)
			}
		})
	}
	// Nothing listening: temporary, and the URL's token is not in the error.
	err := Webhook{URL: "http://" + smtpsink.FreeAddr(t) + "/hooks/secret-token", Format: FormatJSON, Timeout: 30 * time.Second}.Send(context.Background(), p)
	if err == nil || IsPermanent(err) || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("error %v, want a temporary one without the URL", err)
	}
}
