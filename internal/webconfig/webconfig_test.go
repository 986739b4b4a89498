package webconfig_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/files"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

func TestCheck(t *testing.T) {
	good := tlscert.Write(t, true, map[string]string{"alice": "pw"}, "")
	dir := t.TempDir()
	write := func(name, s string) string { return files.Write(t, filepath.Join(dir, name), s) }
	fifo := filepath.Join(dir, "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{name: "none", path: ""},
		{name: "tls and users", path: good.Path},
		{name: "empty file", path: write("empty.yml", "")},
		{name: "missing", path: filepath.Join(dir, "none.yml"), want: "no such file or directory"},
		{name: "unknown key", path: write("unknown.yml", "tls_server_config:\n  cert_fil: x\nbasic_auth: {}\n"), want: "field cert_fil not found"},
		{name: "plain password", path: write("plain.yml", "basic_auth_users:\n  alice: secret\n"), want: "hashedSecret too short"},
		{name: "missing certificate", path: write("nocert.yml", "tls_server_config:\n  cert_file: none.pem\n  key_file: none.key\n"), want: "none.pem"},
		{name: "key without certificate", path: write("nokey.yml", "tls_server_config:\n  key_file: k.pem\n"), want: "missing one of cert or cert_file"},
		{name: "header not allowed", path: write("header.yml", "http_server_config:\n  headers:\n    X-Bogus: 1\n"), want: `HTTP header "X-Bogus" can not be configured`},
		{name: "fifo", path: fifo, want: "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := webconfig.Check(tc.path, "web.config_file")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check: %v, want an error containing %q", err, tc.want)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "web.config_file") || !strings.Contains(msg, tc.path) {
				t.Errorf("error is not one line naming the file and the key: %q", msg)
			}
		})
	}
}

// serve serves h through the file at path on a free port until the test
// ends; it returns the address.
func serve(t *testing.T, path string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10}
	done := make(chan error, 1)
	go func() { done <- webconfig.Serve(ln, srv, path, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestServeTLSAndLogin: over TLS with a throwaway certificate, a request
// without login, with a wrong password and for an unknown user is 401;
// alice's password lets her in, and the handler learns her name from
// Users; the configured header is set; the server's header bound holds.
func TestServeTLSAndLogin(t *testing.T) {
	f := tlscert.Write(t, true, map[string]string{"alice": "right"}, "http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=63072000\n")
	if got := webconfig.Scheme(f.Path); got != "https" {
		t.Errorf("Scheme: %q, want https", got)
	}
	users := webconfig.NewUsers(f.Path)
	if !users.Any() {
		t.Fatal("Users.Any: false with alice in the file")
	}
	addr := serve(t, f.Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := users.Authenticated(r)
		if !ok {
			http.Error(w, "no user", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "hello "+name)
	}))
	c := f.Client()
	get := func(user, pass string) (int, string, http.Header) {
		t.Helper()
		code, body, hd, err := tlscert.Get(c, "https://"+addr+"/", user, pass)
		if err != nil {
			t.Fatalf("GET as %q: %v", user, err)
		}
		return code, body, hd
	}
	for _, tc := range []struct{ name, user, pass string }{
		{name: "no login"}, {name: "wrong password", user: "alice", pass: "wrong"}, {name: "unknown user", user: "mallory", pass: "right"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, hd := get(tc.user, tc.pass)
			if code != http.StatusUnauthorized || hd.Get("WWW-Authenticate") == "" {
				t.Errorf("status %d, WWW-Authenticate %q; want 401 with a challenge", code, hd.Get("WWW-Authenticate"))
			}
		})
	}
	code, body, hd := get("alice", "right")
	if code != http.StatusOK || body != "hello alice" {
		t.Errorf("alice: %d %q, want 200 \"hello alice\"", code, body)
	}
	if got := hd.Get("Strict-Transport-Security"); got != "max-age=63072000" {
		t.Errorf("Strict-Transport-Security %q, want the file's", got)
	}
	// The server's MaxHeaderBytes holds under TLS: HTTP/2 advertises it
	// and the client refuses to send more, HTTP/1.1 answers 431.
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
	req.SetBasicAuth("alice", "right")
	req.Header.Set("X-Big", strings.Repeat("x", 8<<10))
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("an 8 KiB header: %d, want 431 (the server's MaxHeaderBytes)", resp.StatusCode)
		}
	} else if !strings.Contains(err.Error(), "larger than peer's advertised limit") {
		t.Errorf("an 8 KiB header: %v, want the server's bound", err)
	}

	// Plain HTTP to the TLS port gets no page.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the TLS listener: 200")
		}
	}
	// A client that does not trust the certificate is refused.
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("https://" + addr + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("an untrusting client connected: %d", resp.StatusCode)
	}
}

// TestUsersWithoutLogin: a file without basic_auth_users checks no
// password, so a name in a request's Authorization is not believed.
func TestUsersWithoutLogin(t *testing.T) {
	f := tlscert.Write(t, false, nil, "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
	if got := webconfig.Scheme(f.Path); got != "http" {
		t.Errorf("Scheme: %q, want http", got)
	}
	users := webconfig.NewUsers(f.Path)
	addr := serve(t, f.Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := users.Authenticated(r)
		io.WriteString(w, name+" "+map[bool]string{true: "believed", false: "not believed"}[ok])
	}))
	code, body, hd, err := tlscert.Get(f.Client(), "http://"+addr+"/", "alice", "anything")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || body != " not believed" {
		t.Errorf("%d %q, want 200 \" not believed\"", code, body)
	}
	if hd.Get("X-Frame-Options") != "deny" {
		t.Errorf("X-Frame-Options %q, want the file's deny", hd.Get("X-Frame-Options"))
	}
	if webconfig.NewUsers("").Any() {
		t.Error("no file: Any is true")
	}
}
