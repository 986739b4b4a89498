package store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store/storetest"
)

// cutLink forwards TCP to a PostgreSQL server; cut closes every link it
// carries, as a killed proxy or a lost host does (no word from the
// server, unlike a terminated session).
type cutLink struct {
	mu    sync.Mutex
	conns []net.Conn
}

// viaCutLink is u through a new cutLink.
func viaCutLink(t *testing.T, u string) (string, *cutLink) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &cutLink{}
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
			go func() { _, _ = io.Copy(d, c); _ = d.Close() }()
			go func() { _, _ = io.Copy(c, d); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); l.cut() })
	pu.Host = ln.Addr().String()
	return pu.String(), l
}

func (l *cutLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}

// TestPostgresCutMidBatch: a write after the writer's link was cut in
// the middle of a batch fails with ErrResource (not the data's fault:
// ingest keeps the file), and so does every write after it, until the
// writer is found to have lost its lock.
func TestPostgresCutMidBatch(t *testing.T) {
	ctx := context.Background()
	u, link := viaCutLink(t, storetest.NewPostgresDB(t))
	s := openPG(t, Options{URL: u, BusyTimeout: 3 * time.Second})
	b := sampleBatch(t, s, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	link.cut()
	err := pgSample(b, 2, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
	b.Rollback()
	if !errors.Is(err, ErrResource) {
		t.Errorf("write after the link was cut: %v, want ErrResource", err)
	}
	for i := range 3 {
		err := s.RecordPass(ctx, Pass{Started: time.Now(), Finished: time.Now()})
		if !errors.Is(err, ErrResource) && !errors.Is(err, ErrLockLost) {
			t.Errorf("record pass %d after the link was cut: %v, want ErrResource or ErrLockLost", i, err)
		}
	}
}
