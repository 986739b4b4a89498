package nfssync

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aicloud/gpusuite/internal/testkit/files"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// waitFor polls cond every 10 ms for up to d; callers give d generously
// (30 s and more), so a busy machine is slower but does not fail.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, d, 10*time.Millisecond, cond)
}

// settled is how long the tests wait for a condition the daemon must reach.
const settled = 60 * time.Second

// TestWatchBurst: 10,000 writes to 100 files give 10,000 events and one
// fix per file.
func TestWatchBurst(t *testing.T) {
	dir := t.TempDir()
	const nfiles, writes = 100, 10000
	// A settle time long enough that a busy machine rarely splits the burst.
	const settle = 500 * time.Millisecond
	d, m := newTestDaemon(t, Options{Roots: []string{dir}, Backend: "inotify", Settle: settle, Workers: 4}, 100*time.Millisecond)
	startDaemon(t, d)
	// On a loaded machine one file's writes may lie further apart than the
	// settle time; each such pause may legitimately start a new burst.
	last := make([]time.Time, nfiles)
	pauses := 0
	for i := 0; i < writes; i++ {
		files.Write(t, filepath.Join(dir, fmt.Sprintf("f%03d", i%nfiles)), fmt.Sprintf("%05d", i))
		now := time.Now()
		if !last[i%nfiles].IsZero() && now.Sub(last[i%nfiles]) > settle/2 {
			pauses++
		}
		last[i%nfiles] = now
	}
	waitFor(t, settled, "not every file fixed", func() bool { return counter(m.Fixes) >= nfiles })
	waitFor(t, settled, "not every write seen", func() bool { return counter(m.Events) >= writes })
	d.WaitIdle(context.Background())
	if got := counter(m.Events); got != writes {
		t.Errorf("events = %v, want %d", got, writes)
	}
	if got := counter(m.Fixes); got < nfiles || got > float64(nfiles+pauses) {
		t.Errorf("fixes = %v, want %d to %d (once per file per burst; %d pauses over %s)", got, nfiles, nfiles+pauses, pauses, settle/2)
	}
}

func TestWatchExcludesAndNewDirectories(t *testing.T) {
	dir := t.TempDir()
	mx, _ := NewMatcher([]string{"*.swp", ".git/objects/**"})
	d, m := newTestDaemon(t, Options{Roots: []string{dir}, Backend: "inotify", Settle: 20 * time.Millisecond, Exclude: mx}, 50*time.Millisecond)
	startDaemon(t, d)
	os.MkdirAll(filepath.Join(dir, "p/.git/objects/ab"), 0o755)
	os.MkdirAll(filepath.Join(dir, "new/deeper"), 0o755)
	// The root, p, p/.git, p/.git/objects, p/.git/objects/ab, new and
	// new/deeper: each file below is then seen once, by its event.
	waitFor(t, settled, "new directories not watched", func() bool { return gauge(m.Watches) == 7 })
	files.Write(t, filepath.Join(dir, "p/.git/objects/ab/cd"), "obj")
	files.Write(t, filepath.Join(dir, ".a.swp"), "swap")
	files.Write(t, filepath.Join(dir, "new/deeper/data"), "data")
	waitFor(t, settled, "file in a new directory not fixed", func() bool { return counter(m.Fixes) == 1 })
	if got := skips(m, "excluded"); got != 2 {
		t.Errorf("excluded = %v, want 2", got)
	}
	// A directory moved within the tree keeps being watched at its new path.
	if err := os.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	// Events come in order: once an excluded marker written after the
	// rename is seen, the rename has been handled.
	files.Write(t, filepath.Join(dir, ".marker.swp"), "m")
	waitFor(t, settled, "marker after the rename not seen", func() bool { return skips(m, "excluded") == 3 })
	files.Write(t, filepath.Join(dir, "moved/deeper/data"), "more")
	waitFor(t, settled, "file in a moved directory not fixed", func() bool { return counter(m.Fixes) == 2 })
	if got := skips(m, "gone"); got != 0 {
		t.Errorf("gone = %v: events carried stale paths", got)
	}
}

// TestWatchLimit: with fewer watches than directories, the limit is
// reported once and the watched directories are still fixed.
func TestWatchLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxWatches int
		enospcFrom int // inject ENOSPC from the kernel after this many watches (0: never)
		wantLog    string
	}{
		{name: "configured cap", maxWatches: 3, wantLog: "nfssync.max_watches (3) reached"},
		{name: "kernel limit", enospcFrom: 3, wantLog: "fs.inotify.max_user_watches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := 0; i < 10; i++ {
				os.MkdirAll(filepath.Join(dir, fmt.Sprintf("d%d", i)), 0o755)
			}
			var logs logs.Buffer
			d, m := newTestDaemon(t, Options{Roots: []string{dir}, Backend: "inotify", Settle: 10 * time.Millisecond, MaxWatches: tc.maxWatches}, 50*time.Millisecond)
			d.log = slog.New(slog.NewTextHandler(&logs, nil))
			if tc.enospcFrom > 0 {
				n := 0
				d.addWatch = func(fd int, p string, mask uint32) (int, error) {
					if n++; n > tc.enospcFrom {
						return -1, unix.ENOSPC
					}
					return unix.InotifyAddWatch(fd, p, mask)
				}
			}
			startDaemon(t, d)
			if got := gauge(m.Watches); got != 3 {
				t.Errorf("watches = %v, want 3", got)
			}
			if got := gauge(m.WatchLimit); got != 1 {
				t.Errorf("watch limit gauge = %v, want 1", got)
			}
			if got := counter(m.Unwatched); got != 8 {
				t.Errorf("unwatched = %v, want 8", got)
			}
			if got := strings.Count(logs.String(), "left unwatched"); got != 1 || !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("want one error naming %q, got:\n%s", tc.wantLog, logs.String())
			}
			files.Write(t, filepath.Join(dir, "top"), "x")
			waitFor(t, settled, "file in a watched directory not fixed", func() bool { return counter(m.Fixes) == 1 })
		})
	}
}

// fakeSource lets a test emit events and overflows.
type fakeSource struct {
	emit     chan string
	overflow chan struct{}
}

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) Close() error { return nil }
func (f *fakeSource) Run(ctx context.Context, emit func(string), overflow func()) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case p := <-f.emit:
			emit(p)
		case <-f.overflow:
			overflow()
		}
	}
}

// TestWatchOverflowRescans: after a queue overflow the recently changed
// files are found by a rescan and fixed; older ones are left alone.
func TestWatchOverflowRescans(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	files.Write(t, filepath.Join(dir, "old"), "o")
	oldC := ctime(t, filepath.Join(dir, "old"))
	// ctime cannot be set: rewrite "recent" until its ctime is 20 ms past
	// old's (the kernel's clock is coarse; this is the age under test).
	var recentC time.Time
	for end := time.Now().Add(settled); recentC.Sub(oldC) < 20*time.Millisecond; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("ctime did not advance")
		}
		files.Write(t, filepath.Join(dir, "sub/recent"), "R")
		recentC = ctime(t, filepath.Join(dir, "sub/recent"))
	}
	src := &fakeSource{emit: make(chan string), overflow: make(chan struct{})}
	d, m := newTestDaemon(t, Options{Roots: []string{dir}, Settle: 10 * time.Millisecond, RescanLookback: 10 * time.Millisecond}, 50*time.Millisecond)
	d.source = src
	// The daemon's clock stands 5 ms after recent's ctime until the rescan
	// has started, so its lookback falls between the two files however
	// slowly this machine gets there.
	var frozen atomic.Bool
	frozen.Store(true)
	d.now = func() time.Time {
		if frozen.Load() {
			return recentC.Add(5 * time.Millisecond)
		}
		return time.Now()
	}
	startDaemon(t, d)
	oldM := files.Mtime(t, filepath.Join(dir, "old"))
	src.overflow <- struct{}{}
	waitFor(t, settled, "no rescan after the overflow", func() bool { return counter(m.Rescans) == 1 })
	frozen.Store(false)
	waitFor(t, settled, "recent file not fixed after the rescan", func() bool { return counter(m.Fixes) == 1 })
	if got := counter(m.Overflows); got != 1 {
		t.Errorf("overflows = %v", got)
	}
	d.WaitIdle(context.Background())
	if !files.Mtime(t, filepath.Join(dir, "old")).Equal(oldM) || counter(m.Fixes) != 1 {
		t.Errorf("an old file was touched by the rescan")
	}
}

func ctime(t *testing.T, p string) time.Time {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return time.Unix(st.Ctim.Unix())
}

func TestWatchQueueFullAndOutside(t *testing.T) {
	dir := t.TempDir()
	src := &fakeSource{emit: make(chan string), overflow: make(chan struct{})}
	d, m := newTestDaemon(t, Options{Roots: []string{dir}, Settle: time.Hour, MaxPending: 2}, 50*time.Millisecond)
	d.source = src
	startDaemon(t, d)
	for _, p := range []string{"a", "b", "c", "d"} {
		src.emit <- filepath.Join(dir, p)
	}
	src.emit <- "/elsewhere/x"
	src.emit <- filepath.Join(dir, "a") // already pending: coalesced
	// The coalesced "a" is counted after the skips: wait for every count.
	waitFor(t, settled, "skips and events not counted", func() bool {
		return skips(m, "queue_full") == 2 && skips(m, "outside") == 1 && counter(m.Events) == 6
	})
	if got, q, o := counter(m.Events), skips(m, "queue_full"), skips(m, "outside"); got != 6 || q != 2 || o != 1 {
		t.Errorf("events = %v, queue_full = %v, outside = %v; want 6, 2, 1", got, q, o)
	}
}

// TestWatchRateLimit: the cap spreads fixes over time.
func TestWatchRateLimit(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 30; i++ {
		files.Write(t, filepath.Join(dir, fmt.Sprint(i)), "x")
	}
	src := &fakeSource{emit: make(chan string), overflow: make(chan struct{})}
	d, m := newTestDaemon(t, Options{Roots: []string{dir}, Settle: 0, MaxFixesPerSecond: 20, Workers: 4}, 10*time.Millisecond)
	d.source = src
	startDaemon(t, d)
	start := time.Now()
	for i := 0; i < 30; i++ {
		src.emit <- filepath.Join(dir, fmt.Sprint(i))
	}
	waitFor(t, settled, "fixes not done", func() bool { return counter(m.Fixes) == 30 })
	// 20 at once (the bucket), 10 more at 20/s: about 0.5 s.
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("30 fixes at 20/s took %s, want about 0.5 s", took)
	}
}

// TestWatchDeniedDirectory: a directory that cannot be watched (root
// squashed on NFS) is counted and logged once; the rest is watched.
func TestWatchDeniedDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "ok"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	var logs logs.Buffer
	d, m := newTestDaemon(t, Options{Roots: []string{dir}, Backend: "inotify", Settle: 10 * time.Millisecond}, 50*time.Millisecond)
	d.log = slog.New(slog.NewTextHandler(&logs, nil))
	d.addWatch = func(fd int, p string, mask uint32) (int, error) {
		if b := filepath.Base(p); b == "a" || b == "b" {
			return -1, unix.EACCES
		}
		return unix.InotifyAddWatch(fd, p, mask)
	}
	startDaemon(t, d)
	if got := counter(m.Unwatched); got != 2 {
		t.Errorf("unwatched = %v, want 2", got)
	}
	if got := strings.Count(logs.String(), "cannot be watched"); got != 1 {
		t.Errorf("logged %d times, want once:\n%s", got, logs.String())
	}
	files.Write(t, filepath.Join(dir, "ok", "f"), "x")
	waitFor(t, settled, "file in a watched directory not fixed", func() bool { return counter(m.Fixes) == 1 })
}

// TestFixLimiter: max_fixes_per_second allows a full burst of that many
// touches at once, then one per 1/n s; 0 is no cap. Times are given, not
// read from the clock, so a slow machine does not change the counts.
func TestFixLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		perSecond int
		// allowed at t0, then at t0+100ms after those.
		atOnce, after100ms int
	}{
		{perSecond: 20, atOnce: 20, after100ms: 2},
		{perSecond: 1, atOnce: 1, after100ms: 0},
		{perSecond: 0, atOnce: 1000, after100ms: 1000},
		{perSecond: -1, atOnce: 1000, after100ms: 1000},
	} {
		t.Run(fmt.Sprint(tc.perSecond), func(t *testing.T) {
			l := newFixLimiter(tc.perSecond)
			count := func(at time.Time) int {
				n := 0
				for n < 1000 && l.AllowN(at, 1) {
					n++
				}
				return n
			}
			if got := count(t0); got != tc.atOnce {
				t.Errorf("allowed at once = %d, want %d", got, tc.atOnce)
			}
			if got := count(t0.Add(100 * time.Millisecond)); got != tc.after100ms {
				t.Errorf("allowed 100ms later = %d, want %d", got, tc.after100ms)
			}
		})
	}
	// A worker waiting for a token gives up when the daemon stops.
	l := newFixLimiter(1)
	if err := l.Wait(context.Background()); err != nil {
		t.Fatalf("first wait: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- l.Wait(ctx) }()
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Errorf("wait after cancel = nil, want the context's error")
		}
	case <-time.After(settled):
		t.Fatalf("wait not ended %s after cancel", settled)
	}
}
