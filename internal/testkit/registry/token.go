package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	tokenService = "gpusuite-test-registry"
	tokenIssuer  = "gpusuite-test-token-service"
)

// startTokenService starts the token service on a loopback port with the
// registry's TLS certificate and returns the registry's auth section.
func (r *Registry) startTokenService(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// The registry trusts tokens whose x5c certificate is in its bundle:
	// a self-signed one is its own root.
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: tokenIssuer},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(r.dir, "token-signer.pem")
	write(t, bundle, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.TokenHost = l.Addr().String()
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.issue(w, req, key, der) }),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{r.cert}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan struct{})
	go func() { srv.ServeTLS(l, "", ""); close(done) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return fmt.Sprintf("  token:\n    realm: https://%s/token\n    service: %s\n    issuer: %s\n    rootcertbundle: %s\n", r.TokenHost, tokenService, tokenIssuer, bundle)
}

type access struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// issue answers GET /token?service=...&scope=repository:NAME:ACTIONS as a
// token service does: a wrong login is refused with 401, a right one gets
// what it asked for, no login gets a token that grants nothing.
func (r *Registry) issue(w http.ResponseWriter, req *http.Request, key *ecdsa.PrivateKey, cert []byte) {
	if req.URL.Path != "/token" || req.URL.Query().Get("service") != tokenService {
		http.Error(w, "unknown service", http.StatusBadRequest)
		return
	}
	user, pass, hasLogin := req.BasicAuth()
	if hasLogin && (user != r.User || pass != r.Password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="gpusuite-test"`)
		http.Error(w, `{"details":"incorrect username or password"}`, http.StatusUnauthorized)
		return
	}
	var grants []access
	for _, scope := range req.URL.Query()["scope"] {
		parts := strings.Split(scope, ":")
		if hasLogin && len(parts) == 3 && parts[0] == "repository" {
			grants = append(grants, access{Type: "repository", Name: parts[1], Actions: strings.Split(parts[2], ",")})
		}
	}
	now := time.Now()
	header, _ := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(cert)}})
	claims, _ := json.Marshal(map[string]any{
		"iss": tokenIssuer, "sub": user, "aud": tokenService, "jti": fmt.Sprint(now.UnixNano()),
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix(), "access": grants,
	})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	rs, ss, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sig := make([]byte, 64)
	rs.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": signing + "." + enc.EncodeToString(sig), "expires_in": 300, "issued_at": now.UTC().Format(time.RFC3339)})
}
