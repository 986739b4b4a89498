package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

// recordType names a spool file's kind (record's file-name protocol).
func recordType(name string) string { return string(record.KindOfFile(name)) }

var shipOrder = map[string]int{"event": 0, "jobgpu": 1, "other": 2, "samples": 3}

// shipBatch is how many files are made durable with one directory fsync.
const shipBatch = 64

// ShipPass ships every spool file that may leave: job events the loop has
// applied (handled), aggregates, segments. Each goes to
// incoming/<node>/ as a temp file, fsync'd, renamed, the directory
// fsync'd, and only then is the local copy deleted. It returns the number
// shipped and the first error, after which it stops.
func (a *Agent) ShipPass(ctx context.Context, handled []string) (int, error) {
	base := a.cfg.IncomingDir
	st, err := os.Stat(base)
	if err != nil {
		return 0, fmt.Errorf("incoming dir %q unavailable (is /data mounted?): %w", base, err)
	}
	if !st.IsDir() {
		return 0, fmt.Errorf("incoming dir %q is not a directory", base)
	}
	dest := filepath.Join(base, a.node)
	if err := asShipUser(a.shipAs, func() error {
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
	names, err := a.spool.List()
	if err != nil {
		return 0, err
	}
	var todo []string
	for _, n := range names {
		if recordType(n) == "event" && !ok[n] {
			continue // not applied yet: ship next pass
		}
		todo = append(todo, n)
	}
	sort.SliceStable(todo, func(i, j int) bool { return shipOrder[recordType(todo[i])] < shipOrder[recordType(todo[j])] })
	shipped := 0
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return shipped, err
		}
		batch := todo[:min(shipBatch, len(todo))]
		todo = todo[len(batch):]
		// sources are opened as root (the spool is root-only); the copies
		// are made with the ship user's identity
		srcs, err := openSources(a.spool.Path, batch)
		if err != nil {
			return shipped, fmt.Errorf("open spool file: %w", err)
		}
		var done []string
		var firstErr error
		err = asShipUser(a.shipAs, func() error {
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
			if err := os.Remove(filepath.Join(a.spool.Path, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return shipped, fmt.Errorf("remove shipped %q: %w", n, err)
			}
			shipped++
			a.metrics.shippedFiles.Inc()
		}
		if firstErr != nil {
			return shipped, firstErr
		}
	}
	return shipped, nil
}

// backlog updates the spool backlog gauges and returns the file count.
func (a *Agent) backlog() int {
	entries, err := os.ReadDir(a.spool.Path)
	if err != nil {
		return 0
	}
	counts := map[string]int{"event": 0, "jobgpu": 0, "samples": 0, "other": 0}
	var bytes int64
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		counts[recordType(e.Name())]++
		if info, err := e.Info(); err == nil {
			bytes += info.Size()
		}
		n++
	}
	for t, c := range counts {
		a.metrics.backlogFiles.WithLabelValues(t).Set(float64(c))
	}
	a.metrics.backlogBytes.Set(float64(bytes))
	return n
}

// requestScan asks the loop to apply spooled events and returns the names
// it handled; nil when the loop is gone.
func (a *Agent) requestScan(ctx context.Context) []string {
	reply := make(chan []string, 1)
	select {
	case a.scanReq <- reply:
	case <-ctx.Done():
		return nil
	}
	select {
	case names := <-reply:
		return names
	case <-ctx.Done():
		return nil
	}
}

// shipLoop ships on agent.ship_interval, backing off from one second up
// to agent.ship_backoff_max while the share is unavailable.
func (a *Agent) shipLoop(ctx context.Context) {
	backoff := time.Duration(0)
	failing := false
	for {
		n, err := a.ShipPass(ctx, a.requestScan(ctx))
		left := a.backlog()
		wait := a.cfg.ShipInterval.Duration
		if err != nil && ctx.Err() == nil {
			a.metrics.shipErrors.Inc()
			if backoff == 0 {
				backoff = time.Second
			} else {
				backoff = min(2*backoff, a.cfg.ShipBackoffMax.Duration)
			}
			wait = backoff
			a.log.Warn("shipping failed; retrying", "err", err, "backlog_files", left, "retry_in", backoff, "shipped", n)
			failing = true
		} else if err == nil {
			backoff = 0
			a.metrics.lastShip.Set(float64(a.now().UnixNano()) / 1e9)
			if failing {
				a.log.Info("shipping works again", "shipped", n, "backlog_files", left)
				failing = false
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Ship applies the spooled job events and ships the spool once, for
// callers that drive the agent themselves (Cycle, Ship, Stop from one
// goroutine: tests, generators of simulated data); Run ships on its own.
func (a *Agent) Ship(ctx context.Context) (int, error) {
	return a.ShipPass(ctx, a.scanEvents())
}
