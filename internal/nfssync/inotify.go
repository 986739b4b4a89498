package nfssync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	dirMask = unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
		unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK
)

// inotifySource watches every directory below the roots, one watch each,
// adding watches for directories that appear. It stays on each root's
// file system and never follows symlinks.
type inotifySource struct {
	fd int
	eventFile
	env   sourceEnv
	roots []string
	devs  map[string]uint64 // root → its device

	addWatch func(fd int, path string, mask uint32) (int, error)

	mu         sync.Mutex
	wds        map[int]string // watch → directory
	limitHit   bool
	deniedSeen bool
}

func newInotify(roots []string, env sourceEnv) (*inotifySource, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init: %w", err)
	}
	s := &inotifySource{fd: fd, eventFile: eventFile{f: os.NewFile(uintptr(fd), "inotify")}, env: env, roots: roots,
		devs: map[string]uint64{}, addWatch: env.addWatch, wds: map[int]string{}}
	if s.addWatch == nil {
		s.addWatch = unix.InotifyAddWatch
	}
	for _, r := range roots {
		var st unix.Stat_t
		if err := unix.Stat(r, &st); err != nil {
			s.Close()
			return nil, fmt.Errorf("stat %q: %w", r, err)
		}
		s.devs[r] = st.Dev
	}
	s.watchAll()
	return s, nil
}

func (s *inotifySource) Name() string { return "inotify" }

// watchAll adds the watches for every root.
func (s *inotifySource) watchAll() {
	for _, r := range s.roots {
		s.addTree(r, s.devs[r], false)
	}
}

// addTree watches dir and the directories below it on device dev. With
// report, regular files found are reported as written: they may have
// been written before the watch was in place.
func (s *inotifySource) addTree(dir string, dev uint64, report bool) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				s.denied(p, err)
			}
			return nil // vanished or unreadable: nothing to watch
		}
		if !d.IsDir() {
			if report && d.Type().IsRegular() {
				s.env.newDirFile(p)
			}
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return fs.SkipDir
		}
		if st.Dev != dev {
			return fs.SkipDir // another mount
		}
		if !s.add(p) {
			return fs.SkipDir
		}
		return nil
	})
}

// add watches one directory; false when it is not watched.
func (s *inotifySource) add(dir string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env.maxWatches > 0 && len(s.wds) >= s.env.maxWatches {
		s.limit(dir, fmt.Errorf("nfssync.max_watches (%d) reached", s.env.maxWatches))
		return false
	}
	wd, err := s.addWatch(s.fd, dir, dirMask)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOSPC):
			s.limit(dir, fmt.Errorf("the kernel's inotify watch limit (fs.inotify.max_user_watches) is reached"))
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			s.mu.Unlock()
			s.denied(dir, err)
			s.mu.Lock()
		}
		return false
	}
	if _, ok := s.wds[wd]; !ok {
		s.env.metrics.Watches.Inc()
	}
	s.wds[wd] = dir
	return true
}

// limit reports a directory left unwatched; the first one is logged.
func (s *inotifySource) limit(dir string, why error) {
	s.env.metrics.Unwatched.Inc()
	s.env.metrics.WatchLimit.Set(1)
	if !s.limitHit {
		s.limitHit = true
		s.env.log.Error("directories are left unwatched and their files are not fixed: "+why.Error()+
			"; raise it (sysctl fs.inotify.max_user_watches), or run as root to use fanotify",
			"first_unwatched", dir, "watches", len(s.wds))
	}
}

// denied counts a directory root may not enter or watch (root_squash on
// the export); the first is logged.
func (s *inotifySource) denied(dir string, err error) {
	s.env.metrics.Unwatched.Inc()
	s.mu.Lock()
	first := !s.deniedSeen
	s.deniedSeen = true
	s.mu.Unlock()
	if first {
		s.env.log.Warn("a directory cannot be watched, files written below it are not fixed; with root_squash on the export, export /data to the servers with no_root_squash",
			"dir", dir, "err", err)
	}
}

// removeTree drops the watches of dir and below (moved out of the tree).
func (s *inotifySource) removeTree(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for wd, p := range s.wds {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			unix.InotifyRmWatch(s.fd, uint32(wd))
			delete(s.wds, wd)
			s.env.metrics.Watches.Dec()
		}
	}
}

// renameTree rewrites the paths of the watches of a moved directory.
func (s *inotifySource) renameTree(old, new string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for wd, p := range s.wds {
		if p == old || strings.HasPrefix(p, old+"/") {
			s.wds[wd] = new + p[len(old):]
		}
	}
}

func (s *inotifySource) dirOf(wd int32) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.wds[int(wd)]
	return p, ok
}

func (s *inotifySource) devFor(p string) uint64 {
	for _, r := range s.roots {
		if p == r || strings.HasPrefix(p, r+"/") || r == "/" {
			return s.devs[r]
		}
	}
	return 0
}

func (s *inotifySource) Run(ctx context.Context, emit func(string), overflow func()) error {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	buf := make([]byte, 256*1024)
	const hdr = unix.SizeofInotifyEvent
	for {
		n, err := s.f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("read inotify: %w", err)
		}
		movedFrom := map[uint32]string{}
		for off := 0; off+hdr <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := buf[off+hdr : off+hdr+int(ev.Len)]
				if i := indexNUL(raw); i >= 0 {
					raw = raw[:i]
				}
				name = string(raw)
			}
			off += hdr + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				overflow()
				continue
			case ev.Mask&unix.IN_IGNORED != 0:
				s.mu.Lock()
				if _, ok := s.wds[int(ev.Wd)]; ok {
					delete(s.wds, int(ev.Wd))
					s.env.metrics.Watches.Dec()
				}
				s.mu.Unlock()
				continue
			}
			dir, ok := s.dirOf(ev.Wd)
			if !ok || name == "" {
				continue
			}
			p := dir + "/" + name
			isDir := ev.Mask&unix.IN_ISDIR != 0
			switch {
			case ev.Mask&unix.IN_CLOSE_WRITE != 0 && !isDir:
				emit(p)
			case isDir && ev.Mask&unix.IN_CREATE != 0:
				s.addTree(p, s.devFor(p), true)
			case isDir && ev.Mask&unix.IN_MOVED_TO != 0:
				if old, ok := movedFrom[ev.Cookie]; ok {
					delete(movedFrom, ev.Cookie)
					s.renameTree(old, p)
				}
				s.addTree(p, s.devFor(p), false)
			case isDir && ev.Mask&unix.IN_MOVED_FROM != 0:
				movedFrom[ev.Cookie] = p
			}
		}
		for _, old := range movedFrom {
			s.removeTree(old) // moved out of the watched tree
		}
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
