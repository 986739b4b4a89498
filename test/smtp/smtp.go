// Package smtp is a real SMTP server for the notifier's tests: Debian's
// python3-aiosmtpd as a sink that writes each message it accepts into a
// Maildir, which the tests read back. make test starts one shared sink
// (test/smtp/harness.sh, GPUSUITE_TEST_SMTP); a test that needs a server
// of its own (one that is down for a while) starts one with Start.
package smtp

import (
	"bytes"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
)

// requireEnv names the variable under which a missing server fails the
// test instead of skipping it (make test sets it).
const requireEnv = "GPUSUITE_REQUIRE_SLURM"

// python is Debian's interpreter, for which python3-aiosmtpd installs the
// module (another python3 may come first on PATH).
const python = "/usr/bin/python3"

// Sink is a running SMTP sink.
type Sink struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// Dir is the Maildir it writes.
	Dir string
	// Roots trusts the certificate of a sink with Options.TLS.
	Roots  *x509.CertPool
	cmd    *exec.Cmd
	exited <-chan struct{}
}

// Shared is make test's sink (GPUSUITE_TEST_SMTP, GPUSUITE_TEST_SMTP_DIR);
// without one, a sink of the test's own. Tests sharing it tell their
// messages apart by recipient.
func Shared(t testing.TB) *Sink {
	t.Helper()
	if addr, dir := os.Getenv("GPUSUITE_TEST_SMTP"), os.Getenv("GPUSUITE_TEST_SMTP_DIR"); addr != "" && dir != "" {
		return &Sink{Addr: addr, Dir: dir}
	}
	if os.Getenv(requireEnv) == "1" {
		t.Fatal("GPUSUITE_TEST_SMTP is not set: make test starts the SMTP sink with test/smtp/harness.sh")
	}
	return Start(t, "")
}

// sinkPy is the handler Start runs: a Maildir with each message's login
// and TLS, and AUTH PLAIN for Options' user.
//
//go:embed sink.py
var sinkPy []byte

// Options are what a sink of the test's own offers.
type Options struct {
	// TLS makes the sink offer STARTTLS with a throwaway certificate
	// for 127.0.0.1 (Sink.Roots trusts it) and refuse mail without it.
	TLS bool
	// User and Password are the one login AUTH PLAIN takes (over TLS);
	// none: AUTH fails.
	User, Password string
}

// Start starts a sink of the test's own on addr (a free loopback port
// when ""), stopped when the test ends. Without aiosmtpd the test fails
// under make test and is skipped otherwise.
func Start(t testing.TB, addr string) *Sink { return StartWith(t, addr, Options{}) }

// StartWith is Start with o.
func StartWith(t testing.TB, addr string, o Options) *Sink {
	t.Helper()
	if err := exec.Command(python, "-c", "import aiosmtpd").Run(); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("no aiosmtpd for %s (apt-get install python3-aiosmtpd; test/deps.sh does): %v", python, err)
		}
		t.Skipf("no aiosmtpd for %s (apt-get install python3-aiosmtpd): %v", python, err)
	}
	if addr == "" {
		addr = FreeAddr(t)
	}
	tmp := t.TempDir()
	// aiosmtpd makes the Maildir (new, cur, tmp) only where none is.
	s := &Sink{Addr: addr, Dir: filepath.Join(tmp, "maildir")}
	if err := os.WriteFile(filepath.Join(tmp, "sink.py"), sinkPy, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-m", "aiosmtpd", "-n", "-l", addr}
	if o.TLS {
		cert, key, pool := tlscert.SelfSigned(t)
		for name, pem := range map[string][]byte{"cert.pem": cert, "key.pem": key} {
			if err := os.WriteFile(filepath.Join(tmp, name), pem, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, "--tlscert", filepath.Join(tmp, "cert.pem"), "--tlskey", filepath.Join(tmp, "key.pem"))
		s.Roots = pool
	}
	args = append(args, "-c", "sink.Sink", s.Dir)
	if o.User != "" {
		args = append(args, o.User, o.Password)
	}
	var log bytes.Buffer
	s.cmd = exec.Command(python, args...)
	s.cmd.Dir = tmp
	s.cmd.Env = append(os.Environ(), "PYTHONPATH="+tmp)
	s.cmd.Stdout, s.cmd.Stderr = &log, &log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	t.Cleanup(func() { s.stop(exited) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("aiosmtpd on %s exited: %s", addr, log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("aiosmtpd on %s did not answer within 30s: %v", addr, err)
		}
	}
	s.exited = exited
	return s
}

// FreeAddr is a loopback address nothing listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Stop stops a sink Start started, and waits until it has.
func (s *Sink) Stop() { s.stop(s.exited) }

func (s *Sink) stop(exited <-chan struct{}) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-exited
}

// Message is one message the sink accepted.
type Message struct {
	// To is the envelope recipient (aiosmtpd's X-RcptTo).
	To      string
	Header  mail.Header
	Subject string // decoded
	Body    string // decoded from its transfer encoding, lines ending in \n
}

// Messages reads every message in the Maildir, in the order written.
func (s *Sink) Messages(t testing.TB) []Message {
	t.Helper()
	var files []string
	for _, sub := range []string{"new", "cur"} {
		m, err := filepath.Glob(filepath.Join(s.Dir, sub, "*"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	type dated struct {
		at  time.Time
		msg Message
	}
	var all []dated
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := parse(data)
		if err != nil {
			t.Fatalf("message %s: %v", f, err)
		}
		all = append(all, dated{st.ModTime(), m})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	out := make([]Message, len(all))
	for i, d := range all {
		out[i] = d.msg
	}
	return out
}

// To is the messages to addr, waiting up to a minute until there are
// at least n (0: those there now).
func (s *Sink) To(t testing.TB, addr string, n int) []Message {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var got []Message
		for _, m := range s.Messages(t) {
			if m.To == addr {
				got = append(got, m)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond) // polling the Maildir, with a deadline
	}
}

func parse(data []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return Message{}, err
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return Message{}, fmt.Errorf("subject: %w", err)
	}
	var body io.Reader = msg.Body
	switch strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")) {
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, msg.Body)
	case "quoted-printable":
		body = quotedprintable.NewReader(msg.Body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return Message{}, fmt.Errorf("body: %w", err)
	}
	return Message{To: msg.Header.Get("X-RcptTo"), Header: msg.Header, Subject: subject, Body: strings.ReplaceAll(string(b), "\r\n", "\n")}, nil
}
