// Package tlscert writes web config files for tests: a
// throwaway self-signed certificate and bcrypt-hashed users, and the
// client that trusts that certificate (Client; Get, with a login).
package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/aicloud/gpusuite/internal/testkit/fetch"
)

// Files is a web config file written into a test's temporary directory.
type Files struct {
	// Path is the web config file.
	Path string
	// Pool trusts the certificate (nil without TLS).
	Pool *x509.CertPool
}

// Write writes a web config file: with TLS when tls is set (a
// certificate for 127.0.0.1, ::1 and localhost, valid for an hour),
// basic_auth_users of users (name → password, hashed here with bcrypt's
// lowest cost) and extra YAML appended as is.
func Write(t testing.TB, withTLS bool, users map[string]string, extra string) Files {
	t.Helper()
	dir := t.TempDir()
	var f Files
	var b strings.Builder
	if withTLS {
		cert, key, pool := SelfSigned(t)
		if err := os.WriteFile(filepath.Join(dir, "cert.pem"), cert, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "key.pem"), key, 0o600); err != nil {
			t.Fatal(err)
		}
		// Relative paths are the file's directory's, as node_exporter reads them.
		b.WriteString("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n")
		f.Pool = pool
	}
	if len(users) > 0 {
		b.WriteString("basic_auth_users:\n")
		for name, pass := range users {
			h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "  %s: %s\n", name, h)
		}
	}
	b.WriteString(extra)
	f.Path = filepath.Join(dir, "web-config.yml")
	if err := os.WriteFile(f.Path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Client is an HTTP client that trusts f's certificate, with a bound.
func (f Files) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: f.Pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Get GETs url with c (a Files' Client), logged in as user with pass
// unless user is empty, and returns the status, the body (at most
// fetch.MaxBytes, fetch.Get's bound) and the headers. It returns the
// request's error rather than failing the test, so that a test may poll
// a server that is not up yet; c keeps its connection, as a browser's
// would, for the next.
func Get(c *http.Client, url, user, pass string) (int, string, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, fetch.MaxBytes))
	return resp.StatusCode, string(b), resp.Header, err
}

// SelfSigned is a throwaway certificate for 127.0.0.1, ::1 and
// localhost, valid for an hour and its own CA, as PEM, with a pool that
// trusts it.
func SelfSigned(t testing.TB) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "gpusuite test"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pool
}
