package web

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// TestFormsRateBounded: a user past the burst is refused until the
// bucket refills; the users whose rate is kept stay under maxFormUsers
// however many send, the idlest forgotten first.
func TestFormsRateBounded(t *testing.T) {
	f, err := newForms(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	for i := range formBurst {
		if !f.allow("alice", now) {
			t.Fatalf("post %d of the burst refused", i+1)
		}
	}
	if f.allow("alice", now) {
		t.Error("a post past the burst allowed")
	}
	if !f.allow("alice", now.Add(3*time.Second)) {
		t.Error("a post after the bucket refilled one refused")
	}
	for i := range 3 * maxFormUsers {
		f.allow("u"+strconv.Itoa(i), now.Add(time.Duration(i)*time.Millisecond))
		if len(f.users) > maxFormUsers {
			t.Fatalf("%d users kept after %d sent, more than %d", len(f.users), i+1, maxFormUsers)
		}
	}
	if _, ok := f.users["u"+strconv.Itoa(3*maxFormUsers-1)]; !ok {
		t.Error("the last user to send was forgotten")
	}
}

// TestFormToken: a token is the user's own and compared whole.
func TestFormToken(t *testing.T) {
	f, err := newForms(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := newForms(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := f.token("alice")
	for _, tc := range []struct {
		name, user, token string
		ok                bool
	}{
		{"alice's", "alice", a, true},
		{"alice's as bob", "bob", a, false},
		{"cut short", "alice", a[:len(a)-1], false},
		{"empty", "alice", "", false},
		{"another start's", "alice", other.token("alice"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.validToken(tc.user, tc.token); got != tc.ok {
				t.Errorf("validToken(%q, %q) = %v, want %v", tc.user, tc.token, got, tc.ok)
			}
		})
	}
}

// TestIsFormPath: ReadOnly lets a POST through to the forms' actions
// alone.
func TestIsFormPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/book/add": true, "/book/rm": true, "/job/c1/7/ignore": true, "/job/c1/7_2+1/ignore": true,
		"/book": false, "/job/c1/7": false, "/job/c1/7/ignore/x": false, "/job/ignore": false, "/api/v1/jobs/c1/7/ignore": false, "/": false,
	} {
		if got := isFormPath(path); got != want {
			t.Errorf("isFormPath(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestSameOrigin: a post's Origin (else Referer) must name the host the
// browser reached: the request's, or a trusted proxy's X-Forwarded-Host.
func TestSameOrigin(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		name, peer, origin, referer, forwarded string
		proxies                                []netip.Prefix
		ok                                     bool
	}{
		{"same host", "192.0.2.1:5000", "http://head1:9466", "", "", nil, true},
		{"other host", "192.0.2.1:5000", "http://evil.example", "", "", nil, false},
		{"other port", "192.0.2.1:5000", "http://head1:9467", "", "", nil, false},
		{"referer without origin", "192.0.2.1:5000", "", "http://head1:9466/book?node=n1", "", nil, true},
		{"null origin, referer elsewhere", "192.0.2.1:5000", "null", "http://evil.example/x", "", nil, false},
		{"neither", "192.0.2.1:5000", "", "", "", nil, false},
		{"behind a trusted proxy", "10.0.0.5:5000", "https://dash.example", "", "dash.example", proxies, true},
		{"forwarded host from an untrusted peer", "192.0.2.1:5000", "https://dash.example", "", "dash.example", proxies, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://head1:9466/book/add", nil)
			r.RemoteAddr = tc.peer
			for k, v := range map[string]string{"Origin": tc.origin, "Referer": tc.referer, "X-Forwarded-Host": tc.forwarded} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			if err := sameOrigin(nil, r, tc.proxies); (err == nil) != tc.ok {
				t.Errorf("sameOrigin: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
