// Package registry starts a real container registry for tests: Debian's
// docker-registry on a free loopback port, with TLS from a throwaway CA and
// htpasswd (bcrypt) logins, and pushes images built with umoci from a tiny
// rootfs as Docker v2s2 with skopeo, as enroot would pull them.
package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/aicloud/gpusuite/internal/testkit"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
)

// Tools are the programs the registry tests need, from Debian's
// docker-registry, skopeo and umoci packages (test/deps.sh installs them).
var Tools = []string{"docker-registry", "skopeo", "umoci"}

// Registry is a running registry.
type Registry struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// User and Password are the one login the registry accepts (no
	// spaces: a netrc file cannot hold them).
	User, Password string
	// CAFile is the CA certificate (PEM) the registry's certificate is
	// signed by; give it to a client as SSL_CERT_FILE.
	CAFile string
	// CertDir holds ca.crt, as skopeo's --cert-dir wants it.
	CertDir string
	// Roots trusts the CA, for an http.Client in the test process.
	Roots *x509.CertPool

	// TokenHost is the token service's 127.0.0.1:PORT (StartToken only).
	TokenHost string

	dir    string
	layout string // the OCI layout the pushed image is built in, once
	cert   tls.Certificate
}

// Require ends the test when a tool is missing (testkit.Missing: a skip,
// or a failure under make test).
func Require(t testing.TB) {
	t.Helper()
	for _, p := range Tools {
		if _, err := exec.LookPath(p); err != nil {
			testkit.Missing(t, "%s is missing: the registry tests need Debian's docker-registry, skopeo and umoci (test/deps.sh installs them)", p)
		}
	}
}

// Start starts a registry with htpasswd (Basic) logins that lives until
// the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	return start(t, false)
}

// StartToken starts a registry that takes Bearer tokens from a token
// service of its own on another port, as nvcr.io and Docker Hub do: the
// service checks the login (Basic), gives an anonymous caller a token
// that may pull nothing, and signs ES256 JWTs the registry verifies.
func StartToken(t testing.TB) *Registry {
	t.Helper()
	return start(t, true)
}

func start(t testing.TB, token bool) *Registry {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	r := &Registry{dir: dir, User: "alice", Password: "s3cret-pass", CertDir: filepath.Join(dir, "certs")}
	r.Addr = FreeAddr(t)
	r.makeTLS(t)
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	write(t, htpasswd, r.User+":"+string(hash)+"\n")
	auth := fmt.Sprintf("  htpasswd:\n    realm: gpusuite-test\n    path: %s\n", htpasswd)
	if token {
		auth = r.startTokenService(t)
	}
	// enroot's Basic-auth path speaks HTTP/1.1 only; so does the registry.
	conf := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  secret: test-only
  tls:
    certificate: %s
    key: %s
  http2:
    disabled: true
auth:
%s`, filepath.Join(dir, "storage"), r.Addr, filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), auth)
	confPath := filepath.Join(dir, "config.yml")
	write(t, confPath, conf)
	logPath := filepath.Join(dir, "registry.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker-registry", "serve", confPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start docker-registry: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// Ready when /v2/ asks for a login.
	client := r.Client(2 * time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("docker-registry exited: %v\n%s", err, log)
		default:
		}
		resp, err := client.Get("https://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return r
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("docker-registry did not answer on %s in 30 s (last: %v)\n%s", r.Addr, err, log)
		}
		time.Sleep(50 * time.Millisecond) // polling a port that is not yet open
	}
}

// Client is an HTTP client that trusts the registry's CA, with an overall
// timeout.
func (r *Registry) Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: r.Roots}}}
}

// Push builds a one-file image with umoci (once per registry) and pushes
// it as Docker v2s2 to repo:tag with skopeo.
func (r *Registry) Push(t testing.TB, repo, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if r.layout == "" {
		layout := filepath.Join(r.dir, "oci")
		hello := filepath.Join(r.dir, "hello")
		write(t, hello, "hello from the test image\n")
		run(ctx, t, "umoci", "init", "--layout", layout)
		run(ctx, t, "umoci", "new", "--image", layout+":base")
		run(ctx, t, "umoci", "insert", "--image", layout+":base", hello, "/hello")
		r.layout = layout
	}
	run(ctx, t, "skopeo", "--insecure-policy", "copy", "--quiet", "--format", "v2s2",
		"--dest-creds", r.User+":"+r.Password, "--dest-cert-dir", r.CertDir,
		"oci:"+r.layout+":base", "docker://"+r.Addr+"/"+repo+":"+tag)
}

// FreeAddr is a loopback address no one listens on (just now).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// makeTLS makes the registry's certificate for 127.0.0.1 and localhost:
// tlscert's throwaway one, self-signed as its own CA.
func (r *Registry) makeTLS(t testing.TB) {
	t.Helper()
	certPEM, keyPEM, pool := tlscert.SelfSigned(t)
	var err error
	if r.cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	r.CAFile = filepath.Join(r.dir, "ca.pem")
	write(t, r.CAFile, string(certPEM))
	if err := os.MkdirAll(r.CertDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.CertDir, "ca.crt"), string(certPEM))
	write(t, filepath.Join(r.dir, "server.pem"), string(certPEM))
	write(t, filepath.Join(r.dir, "server.key"), string(keyPEM))
	r.Roots = pool
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func run(ctx context.Context, t testing.TB, argv ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out.String())
	}
}
