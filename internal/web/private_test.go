package web_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestPrivateDataProxyHeader: with web.user_header, the reverse proxy's
// header names the user, believed only from web.trusted_proxies: an
// admin sees every name on the board, its API and its event stream, u7
// sees u7's own job in the API and no other name anywhere, and a header
// from a peer that is no trusted proxy is ignored (401).
func TestPrivateDataProxyHeader(t *testing.T) {
	lb := newLiveBoard(t, nil)
	opts := func(proxy string) web.Options {
		return web.Options{Board: lb.src, BoardTick: 100 * time.Millisecond, PrivateData: true, Admins: []string{"boss"},
			UserHeader: "X-Remote-User", TrustedProxies: []netip.Prefix{netip.MustParsePrefix(proxy)}}
	}
	trusted, untrusted := newBoardServer(t, opts("127.0.0.0/8")), newBoardServer(t, opts("10.0.0.0/8"))
	c := &http.Client{Timeout: 30 * time.Second}
	get := func(base, path, user string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set("X-Remote-User", user)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s as %q: %v", path, user, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		return resp.StatusCode, string(b)
	}
	// users are the job users and process owners of the status document.
	users := func(body string) map[string]bool {
		t.Helper()
		var doc board.StatusDoc
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("status document: %v in %.300s", err, body)
		}
		out := map[string]bool{}
		for _, n := range doc.Nodes {
			for _, g := range n.GPUs {
				for _, j := range g.Jobs {
					out[j.User] = true
				}
				for _, p := range g.Procs {
					out[p.User] = true
				}
			}
		}
		return out
	}

	for _, path := range []string{"/", "/api/v1/board", "/api/v1/free", "/api/v1/board/events"} {
		if code, _ := get(trusted.URL, path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without the header: %d, want 401", path, code)
		}
		if code, _ := get(untrusted.URL, path, "boss"); code != http.StatusUnauthorized {
			t.Errorf("%s with the header from an untrusted peer: %d, want 401", path, code)
		}
	}
	if code, _ := get(trusted.URL, "/static/style.css", ""); code != http.StatusOK {
		t.Errorf("static file without the header: %d, want 200", code)
	}

	code, body := get(trusted.URL, "/api/v1/board", "boss")
	if got := users(body); code != http.StatusOK || !got["u7"] || !got["u8"] || !got["mallory"] {
		t.Errorf("boss: %d, users %v, want u7, u8 and mallory", code, got)
	}
	code, body = get(trusted.URL, "/api/v1/board", "u7")
	if got := users(body); code != http.StatusOK || !got["u7"] || got["u8"] || got["mallory"] || !got["(hidden)"] {
		t.Errorf("u7: %d, users %v, want u7 and (hidden) only", code, got)
	}
	// The page and its stream are one rendering for all who see names
	// hidden: no name at all.
	for _, tc := range []struct {
		user  string
		names bool
	}{{"boss", true}, {"u7", false}} {
		_, page := get(trusted.URL, "/", tc.user)
		ev := firstBoardEvent(t, c, trusted.URL, tc.user)
		for what, s := range map[string]string{"page": page, "event stream": ev} {
			if has := strings.Contains(s, "u8") && strings.Contains(s, "mallory"); has != tc.names {
				t.Errorf("%s as %s: names shown %v, want %v", what, tc.user, has, tc.names)
			}
			if !tc.names && (strings.Contains(s, "u7") || !strings.Contains(s, "(hidden)")) {
				t.Errorf("%s as %s shows a name or no (hidden)", what, tc.user)
			}
		}
	}
}

// firstBoardEvent is the data of the first "board" event of the stream
// as user.
func firstBoardEvent(t *testing.T, c *http.Client, base, user string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/board/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Remote-User", user)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("event stream as %s: %v", user, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream as %s: %d", user, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	var data strings.Builder
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "event: board":
			in = true
		case in && strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(line, "data:"))
		case in && line == "":
			return data.String()
		}
	}
	t.Fatalf("event stream as %s ended without a board event: %v", user, sc.Err())
	return ""
}

// TestPrivateDataNeedsIdentity: web.private_data with no way to name a
// user (no basic_auth_users, no web.user_header) is refused at start.
func TestPrivateDataNeedsIdentity(t *testing.T) {
	cfg := config.Default()
	cfg.Web.PrivateData = true
	_, err := web.OptionsFrom(cfg, nil, slog.New(slog.DiscardHandler), time.Now)
	if err == nil || !strings.Contains(err.Error(), "web.private_data needs to know who asks") {
		t.Fatalf("OptionsFrom: %v, want the private_data refusal", err)
	}
	cfg.Web.UserHeader = "X-Remote-User"
	if _, err := web.OptionsFrom(cfg, nil, slog.New(slog.DiscardHandler), time.Now); err != nil {
		t.Fatalf("OptionsFrom with user_header: %v", err)
	}
	cfg.Web.UserHeader = ""
	cfg.Web.ConfigFile = tlscert.Write(t, false, map[string]string{"alice": "pw"}, "").Path
	if _, err := web.OptionsFrom(cfg, nil, slog.New(slog.DiscardHandler), time.Now); err != nil {
		t.Fatalf("OptionsFrom with basic_auth_users: %v", err)
	}
}
