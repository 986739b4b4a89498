// Package ship moves a node's spool files into the shared incoming
// directory (incoming/<node>/) durably: each is copied as a temp file,
// fsync'd and renamed, the directory fsync'd, and only then is the local
// copy deleted. The agent decides when to ship; this package how.
package ship

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

// order is the shipping order of spool files by kind.
var order = map[record.FileKind]int{record.FileEvent: 0, record.FileJobGPU: 1, record.FileOther: 2, record.FileSegment: 3}

// batchSize is how many files are made durable with one directory fsync.
const batchSize = 64

// Shipper ships one node's spool.
type Shipper struct {
	Spool spool.Dir
	// Incoming is the shared directory; files go to Incoming/Node/.
	Incoming string
	Node     string
	// As is the identity the copies are made with; nil is the caller's.
	As *Identity
	// Shipped, when set, is called for each file shipped and removed.
	Shipped func()
}

// Pass ships every spool file that may leave: job events the caller has
// applied (handled), aggregates, segments. It returns the number shipped
// and the first error, after which it stops.
func (s *Shipper) Pass(ctx context.Context, handled []string) (int, error) {
	base := s.Incoming
	st, err := os.Stat(base)
	if err != nil {
		return 0, fmt.Errorf("incoming dir %q unavailable (is /data mounted?): %w", base, err)
	}
	if !st.IsDir() {
		return 0, fmt.Errorf("incoming dir %q is not a directory", base)
	}
	dest := filepath.Join(base, s.Node)
	if err := AsUser(s.As, func() error {
		if err := os.Mkdir(dest, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %q: %w", dest, err)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	ok := map[string]bool{}
	for _, n := range handled {
		ok[n] = true
	}
	names, err := s.Spool.List()
	if err != nil {
		return 0, err
	}
	var todo []string
	for _, n := range names {
		if record.KindOfFile(n) == record.FileEvent && !ok[n] {
			continue // not applied yet: ship next pass
		}
		todo = append(todo, n)
	}
	sort.SliceStable(todo, func(i, j int) bool { return order[record.KindOfFile(todo[i])] < order[record.KindOfFile(todo[j])] })
	shipped := 0
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return shipped, err
		}
		batch := todo[:min(batchSize, len(todo))]
		todo = todo[len(batch):]
		// sources are opened as root (the spool is root-only); the copies
		// are made with the ship user's identity
		srcs, err := openSources(s.Spool.Path, batch)
		if err != nil {
			return shipped, fmt.Errorf("open spool file: %w", err)
		}
		var done []string
		var firstErr error
		err = AsUser(s.As, func() error {
			for _, n := range batch {
				src, ok := srcs[n]
				if !ok {
					continue // superseded aggregate or dropped segment
				}
				if err := spool.CopyInto(dest, n, src, 0o644); err != nil {
					firstErr = err
					break
				}
				done = append(done, n)
			}
			if len(done) > 0 {
				return spool.SyncDir(dest)
			}
			return nil
		})
		for _, f := range srcs {
			f.Close()
		}
		if err != nil {
			return shipped, err
		}
		for _, n := range done {
			if err := os.Remove(filepath.Join(s.Spool.Path, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return shipped, fmt.Errorf("remove shipped %q: %w", n, err)
			}
			shipped++
			if s.Shipped != nil {
				s.Shipped()
			}
		}
		if firstErr != nil {
			return shipped, firstErr
		}
	}
	return shipped, nil
}

// openSources opens every name in the spool as the caller's own user (the
// spool is root-only), for the ship user's thread to copy from.
func openSources(dir string, names []string) (map[string]*os.File, error) {
	files := make(map[string]*os.File, len(names))
	for _, n := range names {
		f, err := os.Open(dir + "/" + n)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			for _, g := range files {
				g.Close()
			}
			return nil, err
		}
		files[n] = f
	}
	return files, nil
}

// Backlog is what waits in a spool: files by kind, their bytes, and the
// file count.
type Backlog struct {
	Files map[record.FileKind]int
	Bytes int64
	Total int
}

// CountBacklog counts the spool's files (hidden temp files left out).
func CountBacklog(dir string) (Backlog, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Backlog{}, err
	}
	b := Backlog{Files: map[record.FileKind]int{record.FileEvent: 0, record.FileJobGPU: 0, record.FileSegment: 0, record.FileOther: 0}}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b.Files[record.KindOfFile(e.Name())]++
		if info, err := e.Info(); err == nil {
			b.Bytes += info.Size()
		}
		b.Total++
	}
	return b, nil
}
