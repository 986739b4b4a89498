// Package webconfig serves HTTP as the Prometheus web configuration file
// says: the exporter toolkit's web-config.yml, the file node_exporter
// reads (tls_server_config, basic_auth_users with bcrypt hashes,
// http_server_config). The toolkit reads the file again for each
// connection and request, so a renewed certificate or a changed password
// needs no restart. gpuacct serve, the agent's and nfs-sync's /metrics
// serve through it (docs/dashboard.md "TLS and login").
package webconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
)

// Check reads the file at path as the toolkit will when it serves (YAML
// with no unknown key, bcrypt hashes, the certificate and key), so that
// a bad file stops the program at start with one line instead of
// failing every connection. An empty path is plain HTTP and fine. key
// names the configuration key, for the message.
func Check(path, key string) error {
	if path == "" {
		return nil
	}
	if _, err := config.ReadFile(path); err != nil {
		// The path is said once: the message names the file already.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("web config file %q (%s): %w", path, key, err)
	}
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("web config file %q (%s): %w (the exporter toolkit's web-config.yml format: docs/dashboard.md \"TLS and login\")", path, key, oneLine{err})
	}
	return nil
}

// oneLine is an error whose text fits one line: YAML errors list one
// finding a line.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(e.err.Error(), "\n", "; ")), " ")
}

func (e oneLine) Unwrap() error { return e.err }

// Serve serves srv on ln through the file at path ("" plain HTTP) until
// srv is shut down, when it returns http.ErrServerClosed. srv keeps its
// timeouts and header bound; its handler goes behind the toolkit's
// basic auth and headers.
func Serve(ln net.Listener, srv *http.Server, path string, log *slog.Logger) error {
	if path == "" {
		return srv.Serve(ln)
	}
	no := false
	return web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &path, WebListenAddresses: &[]string{}, WebSystemdSocket: &no}, log)
}

// Scheme is how a client reaches a listener served through the file at
// path: "https" when it configures TLS, for log lines and links.
func Scheme(path string) string {
	if path == "" {
		return "http"
	}
	c, err := parse(path)
	if err != nil || (c.TLSConfig.TLSCertPath == "" && c.TLSConfig.TLSCert == "") {
		return "http"
	}
	return "https"
}

func parse(path string) (*web.Config, error) {
	b, err := config.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c web.Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Users tells who a request logged in as through the file's
// basic_auth_users. It reads the file again when it changes, as the
// toolkit does.
type Users struct {
	path string

	mu    sync.Mutex
	mod   time.Time
	size  int64
	names map[string]bool
}

// NewUsers reads the users of the file at path ("" has none).
func NewUsers(path string) *Users { return &Users{path: path} }

// Authenticated is the basic-auth user name r carries when the file
// lists that user. The toolkit's handler, in front of every handler
// served through the file, has then checked the password against the
// same list; a file without users checks nothing, and then no name is
// believed.
func (u *Users) Authenticated(r *http.Request) (string, bool) {
	name, _, ok := r.BasicAuth()
	if !ok || name == "" {
		return "", false
	}
	if !u.current()[name] {
		return "", false
	}
	return name, true
}

// Any reports whether the file lists users: whether requests must log
// in.
func (u *Users) Any() bool { return len(u.current()) > 0 }

func (u *Users) current() map[string]bool {
	if u == nil || u.path == "" {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	fi, err := os.Stat(u.path)
	if err != nil {
		u.names, u.mod, u.size = nil, time.Time{}, 0
		return nil
	}
	if u.names != nil && fi.ModTime().Equal(u.mod) && fi.Size() == u.size {
		return u.names
	}
	c, err := parse(u.path)
	if err != nil {
		// The toolkit answers 500 to every request while the file is
		// broken; no name is believed meanwhile.
		u.names = nil
		return nil
	}
	names := make(map[string]bool, len(c.Users))
	for n := range c.Users {
		names[n] = true
	}
	u.names, u.mod, u.size = names, fi.ModTime(), fi.Size()
	return names
}

// Start serves srv on ln in the background as Serve does, after logging
// what with the address and scheme; a stop other than srv's own close is
// logged as what's error.
func Start(ln net.Listener, srv *http.Server, path string, log *slog.Logger, what string) {
	log.Info(what, "addr", ln.Addr().String(), "scheme", Scheme(path))
	go func() {
		if err := Serve(ln, srv, path, log); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+": stopped", "err", err)
		}
	}()
}

// MaxHeaderBytes bounds a request's header on every server of the suite.
const MaxHeaderBytes = 64 << 10

// NewServer is an http.Server with every timeout set, so that a slow or
// idle client holds a connection only so long; writeTimeout bounds the
// writing of an answer.
func NewServer(h http.Handler, writeTimeout time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: writeTimeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: MaxHeaderBytes}
}

// MetricsServer is the server of a /metrics listener of its own (the
// agent's, nfs-sync's, a one-shot ingest's): serve's bounds, a minute to
// write an answer.
func MetricsServer(h http.Handler) *http.Server { return NewServer(h, time.Minute) }
