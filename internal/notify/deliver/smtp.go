// Package deliver sends the notifier's messages: mail over SMTP (a local
// MTA on :25 by default; STARTTLS and AUTH when the server offers them)
// and webhook posts (Slack/Mattermost-compatible or plain JSON). Every
// delivery is bounded in time; an error says whether trying again can
// help (Permanent), so that the outbox retries or gives up with the
// reason.
package deliver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// Error is a failed delivery. Permanent: the server refused the message
// for good (an unknown recipient, a 4xx webhook answer); the same
// message would fail again.
type Error struct {
	Err       error
	Permanent bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// IsPermanent says whether err is a delivery refused for good.
func IsPermanent(err error) bool {
	var de *Error
	return errors.As(err, &de) && de.Permanent
}

// StartTLS modes of SMTP.StartTLS.
const (
	TLSAuto   = "auto"   // when the server offers it
	TLSAlways = "always" // refuse a server that does not
	TLSNever  = "never"
)

// SMTP is a mail server to send through.
type SMTP struct {
	Host     string
	Port     int
	StartTLS string // TLSAuto when ""
	// User and Password log in (AUTH PLAIN) when User is set; only over
	// TLS or to a loopback server, as net/smtp allows.
	User, Password string
	From           string
	// HelloName is the name given in EHLO; "localhost" when "".
	HelloName string
	// Timeout bounds one whole delivery, from dial to QUIT.
	Timeout time.Duration
	// TLS is the client's TLS configuration (tests: a throwaway CA);
	// nil: the system's roots, ServerName Host.
	TLS *tls.Config
}

// Mail is one message.
type Mail struct {
	To, Subject, Body string
	// MessageID is the Message-ID's local part: the same message sent
	// again carries the same id, so that a receiver can tell.
	MessageID string
	Date      time.Time
}

// Send delivers m through s. An error wraps *Error.
func (s SMTP) Send(ctx context.Context, m Mail) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &Error{Err: fmt.Errorf("connect to mail server %s: %w", addr, err)}
	}
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return &Error{Err: fmt.Errorf("mail server %s: %w", addr, err)}
	}
	// The deadline bounds every read and write; a cancel closes the
	// connection at once.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		conn.Close()
		return smtpError(addr, "greeting", err)
	}
	defer c.Close()
	if err := s.session(c, addr, m); err != nil {
		return err
	}
	// The message was accepted at the end of DATA: a failed QUIT loses
	// nothing.
	_ = c.Quit()
	return nil
}

func (s SMTP) session(c *smtp.Client, addr string, m Mail) error {
	hello := s.HelloName
	if hello == "" {
		hello = "localhost"
	}
	if err := c.Hello(hello); err != nil {
		return smtpError(addr, "EHLO", err)
	}
	mode := s.StartTLS
	if mode == "" {
		mode = TLSAuto
	}
	if ok, _ := c.Extension("STARTTLS"); ok && mode != TLSNever {
		cfg := s.TLS
		if cfg == nil {
			cfg = &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(cfg); err != nil {
			return smtpError(addr, "STARTTLS", err)
		}
	} else if mode == TLSAlways {
		return &Error{Err: fmt.Errorf("mail server %s offers no STARTTLS (notify.mail.starttls = \"always\")", addr)}
	}
	if s.User != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return &Error{Err: fmt.Errorf("mail server %s offers no AUTH, but notify.mail.user is set", addr)}
		}
		if err := c.Auth(smtp.PlainAuth("", s.User, s.Password, s.Host)); err != nil {
			return smtpError(addr, "AUTH", err)
		}
	}
	if err := c.Mail(s.From); err != nil {
		return smtpError(addr, "MAIL FROM", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return smtpError(addr, "RCPT TO "+m.To, err)
	}
	w, err := c.Data()
	if err != nil {
		return smtpError(addr, "DATA", err)
	}
	if _, err := w.Write(Compose(s.From, m)); err != nil {
		return smtpError(addr, "DATA", err)
	}
	if err := w.Close(); err != nil {
		return smtpError(addr, "end of DATA", err)
	}
	return nil
}

// smtpError is err at step of the session. Only a 5xx reply to the
// recipient or the message is permanent: one to the greeting, TLS, login
// or sender is the site's setup, which a fixed config mends, so the
// message waits for it.
func smtpError(addr, step string, err error) error {
	var te *textproto.Error
	perm := errors.As(err, &te) && te.Code >= 500 && (strings.HasPrefix(step, "RCPT") || strings.Contains(step, "DATA"))
	return &Error{Err: fmt.Errorf("mail server %s at %s: %w", addr, step, err), Permanent: perm}
}

// Compose is m as an RFC 5322 message from from: UTF-8 plain text, the
// subject encoded when it is not ASCII, the body in base64 when it is
// not (Japanese), so that no relay rewrites it.
func Compose(from string, m Mail) []byte {
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", from)
	h("To", m.To)
	h("Subject", mime.BEncoding.Encode("utf-8", m.Subject))
	h("Date", m.Date.Format(time.RFC1123Z))
	if m.MessageID != "" {
		h("Message-ID", "<"+m.MessageID+">")
	}
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Auto-Submitted", "auto-generated")
	body := strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")
	if ascii(body) {
		h("Content-Transfer-Encoding", "7bit")
		b.WriteString("\r\n")
		b.WriteString(body)
		return b.Bytes()
	}
	h("Content-Transfer-Encoding", "base64")
	b.WriteString("\r\n")
	enc := base64.StdEncoding.EncodeToString([]byte(body))
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return b.Bytes()
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
