package nfssync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Source reports files closed after writing below the watched
// directories. Run blocks until ctx ends; emit receives absolute paths,
// overflow is called when the kernel dropped events.
type Source interface {
	Name() string
	Run(ctx context.Context, emit func(path string), overflow func()) error
	Close() error
}

// errUnavailable marks a backend that cannot be used here (no privilege,
// unsupported file system); "auto" then falls back.
var errUnavailable = errors.New("backend unavailable")

// sourceEnv is what a source needs besides its roots.
type sourceEnv struct {
	log        *slog.Logger
	metrics    *Metrics
	maxWatches int
	// newDirFile is called for files found in a directory that appeared
	// after the watch started (they may have been written already).
	newDirFile func(path string)
	// addWatch replaces unix.InotifyAddWatch in tests.
	addWatch func(fd int, path string, mask uint32) (int, error)
}

// openSource opens the backend named by kind for roots.
func openSource(kind string, roots []string, env sourceEnv) (Source, error) {
	switch kind {
	case "fanotify":
		return newFanotify(roots, env)
	case "inotify":
		return newInotify(roots, env)
	case "auto":
		s, err := newFanotify(roots, env)
		if err == nil {
			return s, nil
		}
		env.log.Info("fanotify unavailable, using inotify", "reason", err.Error())
		return newInotify(roots, env)
	}
	return nil, fmt.Errorf("backend %q is not auto, fanotify or inotify", kind)
}

// eventFile is a kernel notification descriptor as a file: a source's
// Run reads its events, and Close, from any goroutine and any number of
// times, closes it once, which ends a Read in progress.
type eventFile struct {
	f    *os.File
	once sync.Once
}

func (e *eventFile) Close() error {
	var err error
	e.once.Do(func() { err = e.f.Close() })
	return err
}
