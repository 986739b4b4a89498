package agentproto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// ErrConnect is a socket nobody answers on (no agent, or not this one).
var ErrConnect = errors.New("cannot connect")

// Dial connects to the socket at path, the connection bounded by ctx's
// deadline; an error wraps ErrConnect.
func Dial(ctx context.Context, path string) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConnect, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	return c.(*net.UnixConn), nil
}

// Exchange sends req to the socket at path and reads the answer, of at
// most maxLine bytes, into resp, all within timeout.
func Exchange(ctx context.Context, path string, timeout time.Duration, maxLine int, req, resp any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := WriteLine(conn, req); err != nil {
		return err
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	if !sc.Scan() {
		err := sc.Err()
		if err == nil {
			err = errors.New("connection closed without an answer")
		}
		return err
	}
	if err := json.Unmarshal(sc.Bytes(), resp); err != nil {
		return fmt.Errorf("bad answer: %w", err)
	}
	return nil
}

// Send writes req as one line to the socket at path and closes the
// connection without waiting for an answer, all within timeout: what is
// written before the close stays readable to the listener, so a caller
// that has no use for the answer does not wait for the listener to be
// scheduled.
func Send(ctx context.Context, path string, timeout time.Duration, req any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	werr := WriteLine(conn, req)
	if err := conn.Close(); werr == nil && err != nil {
		werr = fmt.Errorf("send: %w", err)
	}
	return werr
}

// WriteLine writes v to c as one JSON line, within c's deadline.
func WriteLine(c net.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if _, err := c.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// Read reads one request line of at most maxLine bytes from c into req;
// sent is false when the peer sent no line, err says a line that is not
// the request.
func Read(c net.Conn, maxLine int, req any) (sent bool, err error) {
	return NewLines(c, maxLine).Next(req)
}

// Lines reads request lines one after another from one connection.
type Lines struct{ sc *bufio.Scanner }

// NewLines reads lines of at most maxLine bytes from c.
func NewLines(c net.Conn, maxLine int) *Lines {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	return &Lines{sc: sc}
}

// Next reads the next line into req; sent is false when the peer sent no
// more, err says a line that is not the request.
func (l *Lines) Next(req any) (sent bool, err error) {
	if !l.sc.Scan() {
		return false, nil
	}
	return true, json.Unmarshal(l.sc.Bytes(), req)
}

// Reply writes resp to c as one line.
func Reply(c net.Conn, resp any) {
	data, _ := json.Marshal(resp)
	_, _ = c.Write(append(data, '\n'))
}

// PeerCred is what the kernel recorded of the process at the other end of
// c: the client, on a listener's connection; the process that listens, on a
// client's.
func PeerCred(c *net.UnixConn) (*syscall.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("peer credentials: %w", cerr)
	}
	return cred, nil
}
