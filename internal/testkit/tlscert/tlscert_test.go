package tlscert

import (
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/fetch"
)

// TestGet: Get trusts the certificate Write wrote, sends the login only
// when a user is given, returns status, body and headers, and reads no
// more than fetch.MaxBytes of a larger body.
func TestGet(t *testing.T) {
	f := Write(t, true, nil, "")
	pair, err := tls.LoadX509KeyPair(filepath.Join(filepath.Dir(f.Path), "cert.pem"), filepath.Join(filepath.Dir(f.Path), "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write([]byte(strings.Repeat("x", fetch.MaxBytes+10)))
			return
		}
		user, pass, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(user + ":" + pass))
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	base := "https://" + ln.Addr().String()
	c := f.Client()

	for _, tc := range []struct {
		name, path, user, pass string
		code                   int
		body, challenge        string
		bodyLen                int
	}{
		{name: "no login", path: "/", code: http.StatusUnauthorized, challenge: `Basic realm="test"`},
		{name: "login", path: "/", user: "alice", pass: "pw", code: http.StatusOK, body: "alice:pw", bodyLen: 8},
		{name: "bounded body", path: "/big", code: http.StatusOK, body: strings.Repeat("x", 8), bodyLen: fetch.MaxBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, h, err := Get(c, base+tc.path, tc.user, tc.pass)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if code != tc.code || !strings.HasPrefix(body, tc.body) || len(body) != tc.bodyLen || h.Get("WWW-Authenticate") != tc.challenge {
				t.Errorf("Get = %d, %d bytes %.20q, challenge %q; want %d, %d bytes %q, %q", code, len(body), body, h.Get("WWW-Authenticate"), tc.code, tc.bodyLen, tc.body, tc.challenge)
			}
		})
	}
	// A client without the pool does not trust the certificate: Get's
	// trust comes from Write.
	if _, _, _, err := Get(Files{}.Client(), base+"/", "", ""); err == nil {
		t.Error("Get without the certificate's pool connected")
	}
}
