package ledgerdb

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"testing"
)

// CutLink forwards TCP to a PostgreSQL server and can cut every link it
// carries, as a killed proxy or a lost host does: the client hears
// nothing from the server, unlike a terminated session.
type CutLink struct {
	mu    sync.Mutex
	conns []net.Conn
	// trigger, when set, cuts every link the first time a client sends it.
	trigger []byte
	fired   bool
}

// ViaCutLink is the URL u through a new CutLink. A non-nil trigger cuts
// the links the first time a client sends those bytes (a statement's
// text, say); Cut cuts them at once.
func ViaCutLink(t testing.TB, u string, trigger []byte) (string, *CutLink) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &CutLink{trigger: trigger}
	target := pu.Host
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, d)
			l.mu.Unlock()
			go l.pipe(c, d, true)
			go l.pipe(d, c, false)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); l.Cut() })
	pu.Host = ln.Addr().String()
	return pu.String(), l
}

// Cut closes every link.
func (l *CutLink) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}

// pipe copies from → to; from the client (watch), it looks for the
// trigger first.
func (l *CutLink) pipe(from, to net.Conn, watch bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && watch && l.trigger != nil {
			l.mu.Lock()
			hit := !l.fired && bytes.Contains(buf[:n], l.trigger)
			l.fired = l.fired || hit
			l.mu.Unlock()
			if hit {
				l.Cut()
				return
			}
		}
		if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = to.Close()
			return
		}
	}
}
