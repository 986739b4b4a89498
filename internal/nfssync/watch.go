package nfssync

import (
	"container/heap"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"
)

// Options configure a Daemon.
type Options struct {
	// Roots are the watched directories, absolute.
	Roots []string
	// Backend is auto, fanotify or inotify.
	Backend string
	// Settle is the quiet time after a close before a file is looked at.
	Settle time.Duration
	// Exclude names files never touched.
	Exclude *Matcher
	// MaxFixesPerSecond caps touches; 0 is no cap.
	MaxFixesPerSecond int
	// Workers is the number of fixes in flight.
	Workers int
	// MaxPending bounds the files waiting.
	MaxPending int
	// MaxWatches caps inotify watches; 0 is the kernel's limit.
	MaxWatches int
	// RescanLookback is how far back a rescan after an overflow looks.
	RescanLookback time.Duration
	// MaxAttempts bounds touches of one file whose mtime did not move.
	MaxAttempts int
}

// Daemon watches directories and fixes each file written on this server
// once per burst of writes.
type Daemon struct {
	opt     Options
	fixer   *Fixer
	log     *slog.Logger
	metrics *Metrics
	now     func() time.Time

	// source, when set before Run, replaces the kernel backend, and
	// addWatch replaces inotify_add_watch (tests).
	source   Source
	addWatch func(fd int, path string, mask uint32) (int, error)

	roots   []watchRoot
	events  chan string
	over    chan struct{}
	limiter *rate.Limiter
	queued  atomic.Int64 // emitted, not yet taken by the loop
	pending atomic.Int64 // waiting or in flight
	backend atomic.Value // string
	ping    chan chan struct{}
}

type watchRoot struct {
	path string
	fd   int
}

// NewDaemon returns a daemon; Run starts it.
func NewDaemon(opt Options, fixer *Fixer, m *Metrics, log *slog.Logger, now func() time.Time) *Daemon {
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.MaxPending < 1 {
		opt.MaxPending = 100000
	}
	if opt.MaxAttempts < 1 {
		opt.MaxAttempts = 3
	}
	return &Daemon{opt: opt, fixer: fixer, log: log, metrics: m, now: now,
		events: make(chan string, 16384), over: make(chan struct{}, 1), ping: make(chan chan struct{}),
		limiter: newFixLimiter(opt.MaxFixesPerSecond)}
}

// Backend names the backend in use once Run has started it.
func (d *Daemon) Backend() string {
	s, _ := d.backend.Load().(string)
	return s
}

// item is one file waiting for its fix.
type item struct {
	path     string
	root     int
	rel      string
	due      time.Time
	last     time.Time // last close seen
	prev     *Stat
	attempts int
	index    int  // in the heap, -1 when not
	inFlight bool // a worker has it
	again    bool // closed again while in flight
}

type done struct {
	it  *item
	res Result
	at  time.Time
}

// Run watches until ctx ends. ready is called once the watches are in
// place.
func (d *Daemon) Run(ctx context.Context, ready func()) error {
	// Events carry paths without symlinks; so must the roots.
	var roots []string
	for _, r := range d.opt.Roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			d.closeRoots()
			return fmt.Errorf("watched directory %q: %w", r, err)
		}
		fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			d.closeRoots()
			return fmt.Errorf("open watched directory %q: %w", r, err)
		}
		roots = append(roots, real)
		d.roots = append(d.roots, watchRoot{path: strings.TrimSuffix(real, "/"), fd: fd})
	}
	d.opt.Roots = roots
	defer d.closeRoots()
	src := d.source
	if src == nil {
		var err error
		src, err = openSource(d.opt.Backend, d.opt.Roots, sourceEnv{log: d.log, metrics: d.metrics,
			maxWatches: d.opt.MaxWatches, newDirFile: d.emit, addWatch: d.addWatch})
		if err != nil {
			return err
		}
	}
	defer src.Close()
	d.backend.Store(src.Name())
	d.metrics.Window.Set(d.fixer.Window().Seconds())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srcErr := make(chan error, 1)
	go func() {
		srcErr <- src.Run(ctx, d.emit, d.overflow)
	}()

	work := make(chan *item)
	results := make(chan done, d.opt.Workers)
	var wg sync.WaitGroup
	for i := 0; i < d.opt.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if err := d.limiter.Wait(ctx); err != nil {
					results <- done{it: it, res: Result{Outcome: Wait, Retry: d.now()}}
					continue
				}
				r := d.fixer.Fix(d.roots[it.root].fd, it.rel, it.prev)
				results <- done{it: it, res: r, at: d.now()}
			}
		}()
	}
	defer func() {
		close(work)
		go func() {
			for range results {
			}
		}()
		wg.Wait()
		close(results)
	}()

	if ready != nil {
		ready()
	}

	pending := map[string]*item{}
	var h itemHeap
	var readyQ []*item
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	rescanning, rescanAgain := false, false
	rescanDone := make(chan struct{}, 1)
	startRescan := func() {
		if rescanning {
			rescanAgain = true
			return
		}
		rescanning = true
		since := d.now().Add(-d.opt.RescanLookback)
		go func() {
			d.rescan(ctx, since)
			rescanDone <- struct{}{}
		}()
	}
	for {
		if len(h) > 0 {
			timer.Reset(time.Until(h[0].due))
		}
		var send chan *item
		var next *item
		if len(readyQ) > 0 {
			send, next = work, readyQ[0]
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-srcErr:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case p := <-d.events:
			d.queued.Add(-1)
			d.onEvent(p, pending, &h)
		case <-timer.C:
			now := d.now()
			for len(h) > 0 && !h[0].due.After(now) {
				it := heap.Pop(&h).(*item)
				it.inFlight = true
				readyQ = append(readyQ, it)
			}
		case send <- next:
			readyQ[0] = nil
			readyQ = readyQ[1:]
		case r := <-results:
			d.onResult(r, pending, &h)
		case c := <-d.ping:
			close(c)
		case <-d.over:
			d.metrics.Overflows.Inc()
			d.log.Warn("the kernel's event queue overflowed; rescanning for recently changed files", "lookback", d.opt.RescanLookback)
			startRescan()
		case <-rescanDone:
			rescanning = false
			if rescanAgain {
				rescanAgain = false
				startRescan()
			}
		}
		d.metrics.Pending.Set(float64(len(pending)))
		d.pending.Store(int64(len(pending)))
	}
}

func (d *Daemon) closeRoots() {
	for _, r := range d.roots {
		unix.Close(r.fd)
	}
	d.roots = nil
}

// emit queues a path from a source.
func (d *Daemon) emit(p string) {
	d.queued.Add(1)
	d.events <- p
}

func (d *Daemon) overflow() {
	select {
	case d.over <- struct{}{}:
	default:
	}
}

// Alive reports whether the daemon's loop answers within timeout.
func (d *Daemon) Alive(ctx context.Context, timeout time.Duration) bool {
	c := make(chan struct{})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d.ping <- c:
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
	<-c
	return true
}

// WaitIdle returns once no file is waiting or being fixed, or ctx ends.
func (d *Daemon) WaitIdle(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for d.queued.Load()+d.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// locate maps an absolute path to a watched root and the path below it.
func (d *Daemon) locate(p string) (int, string, bool) {
	best, rel := -1, ""
	for i, r := range d.roots {
		if r.path == "" || r.path == "/" {
			if best < 0 {
				best, rel = i, strings.TrimPrefix(p, "/")
			}
			continue
		}
		if strings.HasPrefix(p, r.path+"/") && (best < 0 || len(r.path) > len(d.roots[best].path)) {
			best, rel = i, p[len(r.path)+1:]
		}
	}
	return best, rel, best >= 0 && rel != ""
}

func (d *Daemon) onEvent(p string, pending map[string]*item, h *itemHeap) {
	d.metrics.Events.Inc()
	now := d.now()
	if it, ok := pending[p]; ok {
		it.last = now
		switch {
		case it.inFlight:
			it.again = true
		case it.index >= 0:
			it.due = now.Add(d.opt.Settle)
			heap.Fix(h, it.index)
		}
		return
	}
	root, rel, ok := d.locate(p)
	if !ok {
		d.skip(SkipOutside, p, nil)
		return
	}
	if d.opt.Exclude.Match(rel) {
		d.skip(SkipExcluded, p, nil)
		return
	}
	if len(pending) >= d.opt.MaxPending {
		d.skip(SkipQueueFull, p, nil)
		return
	}
	it := &item{path: p, root: root, rel: rel, due: now.Add(d.opt.Settle), last: now, index: -1}
	pending[p] = it
	heap.Push(h, it)
}

func (d *Daemon) onResult(r done, pending map[string]*item, h *itemHeap) {
	it, res := r.it, r.res
	it.inFlight = false
	reschedule := func(at time.Time) {
		it.due = at
		heap.Push(h, it)
	}
	if it.again {
		// Closed again while being fixed: treat it as a new burst.
		it.again, it.prev, it.attempts = false, nil, 0
		reschedule(r.at.Add(d.opt.Settle))
		return
	}
	switch res.Outcome {
	case Wait:
		st := res.Before
		it.prev = &st
		reschedule(res.Retry)
		return
	case NotMoved:
		it.attempts++
		if it.attempts < d.opt.MaxAttempts {
			reschedule(res.Retry)
			return
		}
		d.log.Warn("touched but the mtime did not move; the server's clock lags more than nfssync.window allows",
			"path", it.path, "mtime", res.After.Mtime, "window", d.fixer.Window())
		d.skip(NotMoved, it.path, nil)
	case Fixed, WouldFix:
		delay := r.at.Sub(it.last)
		d.metrics.Delay.Observe(delay.Seconds())
		if res.Outcome == Fixed {
			d.metrics.Fixes.Inc()
			d.log.Debug("fixed", "path", it.path, "mtime_before", res.Before.Mtime, "mtime_after", res.After.Mtime,
				"size", res.Before.Size, "delay", delay)
		} else {
			d.metrics.Skips.WithLabelValues(string(WouldFix)).Inc()
			d.log.Info("would touch", "path", it.path, "why", res.Why)
		}
	case SkipPermission:
		d.metrics.Skips.WithLabelValues(string(res.Outcome)).Inc()
		if d.fixer.FirstDenial(res.Before) {
			d.log.Warn("cannot touch a file, not retried; its update may stay invisible to other servers",
				"path", it.path, "uid", res.Before.Uid, "err", res.Err)
		}
	case SkipError:
		d.metrics.Skips.WithLabelValues(string(res.Outcome)).Inc()
		d.log.Warn("fix failed", "path", it.path, "err", res.Err)
	default:
		d.skip(res.Outcome, it.path, res.Err)
	}
	delete(pending, it.path)
}

func (d *Daemon) skip(o Outcome, p string, err error) {
	d.metrics.Skips.WithLabelValues(string(o)).Inc()
	if !d.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	if err != nil {
		d.log.Debug("skipped", "path", p, "reason", string(o), "err", err)
		return
	}
	d.log.Debug("skipped", "path", p, "reason", string(o))
}

// rescan reports regular files below the roots changed since since: the
// events lost in an overflow are among them.
func (d *Daemon) rescan(ctx context.Context, since time.Time) {
	d.metrics.Rescans.Inc()
	start, found := d.now(), 0
	for _, r := range d.opt.Roots {
		var rootSt unix.Stat_t
		if unix.Stat(r, &rootSt) != nil {
			continue
		}
		filepath.WalkDir(r, func(p string, e fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return fs.SkipAll
			}
			if err != nil {
				return nil
			}
			var st unix.Stat_t
			if e.IsDir() {
				if unix.Lstat(p, &st) != nil || st.Dev != rootSt.Dev {
					return fs.SkipDir
				}
				return nil
			}
			if !e.Type().IsRegular() || unix.Lstat(p, &st) != nil {
				return nil
			}
			if time.Unix(st.Ctim.Unix()).Before(since) {
				return nil
			}
			found++
			d.emit(p)
			return nil
		})
	}
	d.log.Info("rescan done", "changed_files", found, "took", d.now().Sub(start).Round(time.Millisecond))
}

type itemHeap []*item

func (h itemHeap) Len() int           { return len(h) }
func (h itemHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *itemHeap) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

// newFixLimiter allows perSecond touches a second with bursts of up to
// perSecond, starting full; 0 or less is no cap.
func newFixLimiter(perSecond int) *rate.Limiter {
	if perSecond <= 0 {
		return rate.NewLimiter(rate.Inf, 0)
	}
	return rate.NewLimiter(rate.Limit(perSecond), perSecond)
}
