// Package nfssync makes same-second updates of files on an NFS share
// visible to the other clients: it touches a file written on this server
// once the server's clock has left the timestamp granule of the last
// write, so that every client sees a new mtime and drops its cached pages.
// docs/nfs.md explains the cause and when this is needed.
//
// Files: fix.go (the safe re-touch of one file), run.go (nfs-sync run and
// touch, the watchdog), watch.go (the watch daemon), source.go,
// fanotify.go, inotify.go (where close events come from), exclude.go
// (paths left alone), calibrate.go (the server's timestamp granularity),
// sys.go (the system calls, injectable), metrics.go.
package nfssync

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Outcome says what a fix attempt did. The skip reasons are the values of
// the reason label on /metrics.
type Outcome string

// Outcomes of Fixer.Fix.
const (
	Fixed    Outcome = "fixed"
	WouldFix Outcome = "would_fix" // --dry-run
	Wait     Outcome = "wait"      // too early: try again at Result.Retry
	NotMoved Outcome = "not_moved" // touched, but the mtime did not move: try again

	SkipGone       Outcome = "gone"             // ENOENT: deleted or renamed away
	SkipStale      Outcome = "stale"            // ESTALE: deleted on the server
	SkipSymlink    Outcome = "symlink"          // a symlink on the way or at the end
	SkipOtherMount Outcome = "other_mount"      // the path crosses into another mount
	SkipNotRegular Outcome = "not_regular"      // a directory, device, fifo, ...
	SkipPermission Outcome = "permission"       // the server refused the touch
	SkipFuture     Outcome = "future_timestamp" // touching would move a timestamp backwards
	SkipExcluded   Outcome = "excluded"         // matched an exclude glob
	SkipOutside    Outcome = "outside"          // not under a watched directory
	SkipQueueFull  Outcome = "queue_full"       // too many files pending
	SkipError      Outcome = "error"            // anything else, logged
)

// Result is the outcome of one attempt on one file.
type Result struct {
	Outcome Outcome
	// Retry is when to try again after Wait or NotMoved.
	Retry time.Time
	// Before and After are the file's attributes before and after the
	// touch (After only when Fixed).
	Before, After Stat
	// Why explains the outcome in words, for --dry-run and the log.
	Why string
	Err error
}

// Fixer touches one file at a time, following the rules of docs/nfs.md:
// it never opens for writing, never creates or truncates, never follows
// a symlink, never leaves the directory it was given nor its mount, and
// never moves a timestamp backwards.
type Fixer struct {
	// window is how long after the file's mtime, on this server's
	// clock, the server's clock is surely in a later timestamp granule;
	// calibration may change it while fixes run.
	window atomic.Int64
	// AsOwner retries a refused touch as the file's owner (root only).
	AsOwner bool
	// DryRun reports what would be touched and touches nothing.
	DryRun bool
	// Verify re-reads the attributes from the server after the touch.
	Verify bool
	Now    func() time.Time
	Sys    Sys
	Log    *slog.Logger

	mu     sync.Mutex
	denied map[[2]uint64]struct{} // files whose refusal was logged
}

// NewFixer returns a Fixer with the real system calls.
func NewFixer(window time.Duration, now func() time.Time, log *slog.Logger) *Fixer {
	f := &Fixer{Verify: true, Now: now, Sys: realSys{}, Log: log}
	f.SetWindow(window)
	return f
}

// Window returns the wait after a file's mtime.
func (f *Fixer) Window() time.Duration { return time.Duration(f.window.Load()) }

// SetWindow changes the wait after a file's mtime.
func (f *Fixer) SetWindow(d time.Duration) { f.window.Store(int64(d)) }

// maxDenied bounds the memory of refused files; past it the set restarts
// (and a file may be logged a second time).
const maxDenied = 100000

// Fix makes one attempt on rel beneath the directory dirfd. prev, when
// not nil, is the state seen by an earlier attempt that returned Wait.
func (f *Fixer) Fix(dirfd int, rel string, prev *Stat) Result {
	if rel == "" || strings.HasPrefix(rel, "/") || slices.Contains(strings.Split(rel, "/"), "..") {
		return Result{Outcome: SkipOutside, Why: "the path leaves the directory"}
	}
	fd, err := f.Sys.OpenPath(dirfd, rel)
	if err != nil {
		return errResult(err, "open")
	}
	defer f.Sys.Close(fd)
	st, err := f.Sys.Stat(fd, false)
	if err != nil {
		return errResult(err, "stat")
	}
	if !st.IsRegular() {
		return Result{Outcome: SkipNotRegular, Before: st, Why: "not a regular file"}
	}
	now, window := f.Now(), f.Window()
	// A timestamp further ahead than the window was set on purpose (touch
	// -d, tar): touching would move it backwards.
	if st.Mtime.After(now.Add(window)) || st.Atime.After(now.Add(window)) {
		return Result{Outcome: SkipFuture, Before: st, Why: fmt.Sprintf("mtime %s or atime %s is in the future", st.Mtime.Format(time.RFC3339Nano), st.Atime.Format(time.RFC3339Nano))}
	}
	deadline := st.Mtime.Add(window)
	if now.Before(deadline) {
		return Result{Outcome: Wait, Retry: deadline, Before: st, Why: "the server's clock may still be in the granule of the last write"}
	}
	if prev != nil && !sameFile(*prev, st) && now.Before(st.Ctime.Add(window)) {
		// Changed again since the last look: wait for that write instead.
		return Result{Outcome: Wait, Retry: st.Ctime.Add(window), Before: st, Why: "changed again"}
	}
	if f.DryRun {
		return Result{Outcome: WouldFix, Before: st, Why: fmt.Sprintf("written at %s, %s ago; a touch gives it a new mtime every client notices", st.Mtime.Format(time.RFC3339Nano), now.Sub(st.Mtime).Round(time.Millisecond))}
	}
	if err := f.touch(fd, st); err != nil {
		return errResult(err, "touch")
	}
	if !f.Verify {
		return Result{Outcome: Fixed, Before: st, After: st}
	}
	after, err := f.Sys.Stat(fd, true)
	if err != nil {
		return errResult(err, "verify")
	}
	if !after.Mtime.After(st.Mtime) {
		// The touch landed in the same granule: the server's clock lags
		// more than the window allows for.
		return Result{Outcome: NotMoved, Before: st, After: after, Retry: f.Now().Add(window),
			Why: fmt.Sprintf("mtime stayed at %s; the server's clock lags, raise nfssync.window", after.Mtime.Format(time.RFC3339Nano))}
	}
	return Result{Outcome: Fixed, Before: st, After: after}
}

func (f *Fixer) touch(fd int, st Stat) error {
	err := f.Sys.Touch(fd)
	if err == nil || !isPermission(err) || !f.AsOwner || unix.Geteuid() != 0 || st.Uid == 0 {
		return err
	}
	// root_squash maps root to nobody; the owner may write the file.
	return f.Sys.TouchAs(fd, st.Uid, st.Gid)
}

// FirstDenial records a refused file and reports whether it is the first
// refusal seen for it, which is the one that is logged.
func (f *Fixer) FirstDenial(st Stat) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.denied == nil || len(f.denied) >= maxDenied {
		f.denied = make(map[[2]uint64]struct{})
	}
	k := [2]uint64{st.Dev, st.Ino}
	if _, ok := f.denied[k]; ok {
		return false
	}
	f.denied[k] = struct{}{}
	return true
}

func isPermission(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS)
}

func errResult(err error, op string) Result {
	r := Result{Err: fmt.Errorf("%s: %w", op, err), Why: err.Error()}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		r.Outcome = SkipGone
	case errors.Is(err, unix.ESTALE):
		r.Outcome = SkipStale
	case errors.Is(err, unix.ELOOP):
		r.Outcome, r.Why = SkipSymlink, "a symlink is on the path"
	case errors.Is(err, unix.EXDEV):
		r.Outcome, r.Why = SkipOtherMount, "the path crosses into another mount"
	case isPermission(err):
		r.Outcome = SkipPermission
	default:
		r.Outcome = SkipError
	}
	return r
}
