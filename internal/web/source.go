package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
)

// conn is one read-only opening of the database: every read of the
// dashboard goes through report.Ledger, its one read model and pool.
type conn struct {
	rep    *report.Ledger
	opened time.Time
	// maxNode is the newest nodes.id at open: a newer node means the
	// report package's node names are out of date.
	maxNode int64
	users   int
	old     bool // replaced: close when the last user leaves
}

func (c *conn) closeNow() {
	_ = c.rep.Close()
}

// source hands out the current conn and replaces it after Reopen, so
// nodes that appear later (report.Ledger names nodes at open) are shown.
type source struct {
	o   Options
	mu  sync.Mutex
	cur *conn
	// longest is the longest ended job's seconds, read at longestAt
	// (earliestStart).
	longest   int64
	longestAt time.Time
}

func newSource(o Options) *source { return &source{o: o} }

// acquire returns the current conn and a release to call when done.
func (s *source) acquire(ctx context.Context) (*conn, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.cur != nil && (now.Sub(s.cur.opened) >= s.o.Reopen || s.cur.newNodes(ctx)) {
		s.retire()
	}
	if s.cur == nil {
		c, err := s.open(ctx)
		if err != nil {
			return nil, nil, err
		}
		c.opened = now
		s.cur = c
	}
	c := s.cur
	c.users++
	return c, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.users--
		if c.old && c.users == 0 {
			c.closeNow()
		}
	}, nil
}

// retire drops the current conn; it closes once unused. s.mu is held.
func (s *source) retire() {
	c := s.cur
	s.cur = nil
	c.old = true
	if c.users == 0 {
		c.closeNow()
	}
}

// forget drops the current conn after an error, so the next request
// opens the database again (it may have been replaced or repaired).
func (s *source) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == c {
		s.retire()
	}
}

func (s *source) open(ctx context.Context) (*conn, error) {
	// A file may not be there yet; a PostgreSQL database without its
	// ledger is report.OpenDB's to name.
	if !report.IsURL(s.o.DB) {
		if _, err := os.Stat(s.o.DB); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("accounting database does not exist yet (gpuacct serve creates it at its first pass): %w", fs.ErrNotExist)
		}
	}
	rep, err := report.OpenDB(ctx, s.o.DB, s.o.BusyTimeout)
	if err != nil {
		return nil, err
	}
	rep.Label(ledgerName)
	c := &conn{rep: rep}
	if c.maxNode, err = c.rep.MaxNodeID(ctx); err != nil {
		c.closeNow()
		return nil, fmt.Errorf("read %s: %w", ledgerName, err)
	}
	return c, nil
}

// newNodes reports whether a node appeared since c was opened.
func (c *conn) newNodes(ctx context.Context) bool {
	n, err := c.rep.MaxNodeID(ctx)
	return err != nil || n != c.maxNode
}

func (s *source) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.retire()
	}
	return nil
}
