package nfssync

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// faultySys injects errors a real NFS server gives.
type faultySys struct {
	Sys
	openErr, touchErr, touchAsErr error
	noMove                        bool // touch succeeds but the mtime stays
	touchAs                       int  // calls of TouchAs
}

func (s *faultySys) OpenPath(dirfd int, rel string) (int, error) {
	if s.openErr != nil {
		return -1, s.openErr
	}
	return s.Sys.OpenPath(dirfd, rel)
}

func (s *faultySys) Touch(fd int) error {
	if s.touchErr != nil {
		return s.touchErr
	}
	if s.noMove {
		return nil
	}
	return s.Sys.Touch(fd)
}

func (s *faultySys) TouchAs(fd int, uid, gid uint32) error {
	s.touchAs++
	if s.touchAsErr != nil {
		return s.touchAsErr
	}
	return s.Sys.Touch(fd)
}

// watchDir records every inotify event on dir, to prove what a fix did
// not do (open for writing, modify, create, truncate).
func watchDir(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_ALL_EVENTS); err != nil {
		t.Fatal(err)
	}
	names := map[uint32]string{unix.IN_ACCESS: "access", unix.IN_MODIFY: "modify", unix.IN_ATTRIB: "attrib",
		unix.IN_CLOSE_WRITE: "close_write", unix.IN_CLOSE_NOWRITE: "close_nowrite", unix.IN_OPEN: "open",
		unix.IN_MOVED_FROM: "moved_from", unix.IN_MOVED_TO: "moved_to", unix.IN_CREATE: "create", unix.IN_DELETE: "delete"}
	return func() []string {
		var out []string
		buf := make([]byte, 64*1024)
		n, _ := unix.Read(fd, buf)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			for bit, s := range names {
				if ev.Mask&bit != 0 {
					out = append(out, name+":"+s)
				}
			}
		}
		return out
	}
}

func TestFixRules(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	type setup func(t *testing.T, dir string) string // returns rel
	file := func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte("content"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return "f"
	}
	for _, tc := range []struct {
		name    string
		setup   setup
		sys     *faultySys
		dryRun  bool
		want    Outcome
		touched bool // mtime must move forward
	}{
		{name: "regular file is touched", setup: file, want: Fixed, touched: true},
		{name: "dry run touches nothing", setup: file, dryRun: true, want: WouldFix},
		{name: "too early waits", setup: func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
			return "f"
		}, want: Wait},
		{name: "symlink is not followed", setup: func(t *testing.T, dir string) string {
			file(t, dir)
			os.Symlink("f", filepath.Join(dir, "l"))
			return "l"
		}, want: SkipSymlink},
		{name: "symlinked directory is not followed", setup: func(t *testing.T, dir string) string {
			os.Mkdir(filepath.Join(dir, "real"), 0o755)
			file(t, filepath.Join(dir, "real"))
			os.Symlink("real", filepath.Join(dir, "link"))
			return "link/f"
		}, want: SkipSymlink},
		{name: "dot-dot cannot leave the directory", setup: func(t *testing.T, dir string) string {
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			file(t, dir)
			return "sub/../../f"
		}, want: SkipOutside},
		{name: "directory", setup: func(t *testing.T, dir string) string {
			os.Mkdir(filepath.Join(dir, "d"), 0o755)
			return "d"
		}, want: SkipNotRegular},
		{name: "fifo", setup: func(t *testing.T, dir string) string {
			unix.Mkfifo(filepath.Join(dir, "p"), 0o644)
			return "p"
		}, want: SkipNotRegular},
		{name: "missing file", setup: func(t *testing.T, dir string) string { return "nope" }, want: SkipGone},
		{name: "future mtime is not moved backwards", setup: func(t *testing.T, dir string) string {
			file(t, dir)
			fut := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(dir, "f"), old, fut)
			return "f"
		}, want: SkipFuture},
		{name: "future atime is not moved backwards", setup: func(t *testing.T, dir string) string {
			file(t, dir)
			os.Chtimes(filepath.Join(dir, "f"), time.Now().Add(time.Hour), old)
			return "f"
		}, want: SkipFuture},
		{name: "another mount", setup: func(t *testing.T, dir string) string {
			m := filepath.Join(dir, "mnt")
			os.Mkdir(m, 0o755)
			if err := unix.Mount("tmpfs", m, "tmpfs", 0, "size=1m"); err != nil {
				t.Fatalf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { unix.Unmount(m, unix.MNT_DETACH) })
			file(t, m)
			return "mnt/f"
		}, want: SkipOtherMount},
		{name: "ESTALE", setup: file, sys: &faultySys{openErr: unix.ESTALE}, want: SkipStale},
		{name: "ENOENT at touch", setup: file, sys: &faultySys{touchErr: unix.ENOENT}, want: SkipGone},
		{name: "refused even as owner", setup: file, sys: &faultySys{touchErr: unix.EPERM, touchAsErr: unix.EACCES}, want: SkipPermission},
		{name: "mtime did not move", setup: file, sys: &faultySys{noMove: true}, want: NotMoved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rel := tc.setup(t, dir)
			var before []byte
			var beforeSt unix.Stat_t
			p := filepath.Join(dir, rel)
			unix.Lstat(p, &beforeSt)
			if beforeSt.Mode&unix.S_IFMT == unix.S_IFREG {
				before, _ = os.ReadFile(p)
			}
			entries, _ := os.ReadDir(dir)
			events := watchDir(t, dir)

			fx := NewFixer(time.Second, time.Now, discardLogger())
			fx.DryRun = tc.dryRun
			fx.AsOwner = true
			if tc.sys != nil {
				tc.sys.Sys = realSys{}
				fx.Sys = tc.sys
			}
			dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(dfd)
			r := fx.Fix(dfd, rel, nil)
			gotEv := events()
			if r.Outcome != tc.want {
				t.Fatalf("Fix = %s (%s, %v), want %s", r.Outcome, r.Why, r.Err, tc.want)
			}

			var afterSt unix.Stat_t
			unix.Lstat(p, &afterSt)
			var after []byte
			if afterSt.Mode&unix.S_IFMT == unix.S_IFREG {
				after, _ = os.ReadFile(p)
			}
			if !bytes.Equal(before, after) || afterSt.Size != beforeSt.Size || afterSt.Ino != beforeSt.Ino {
				t.Errorf("content, size or inode changed")
			}
			moved := afterSt.Mtim != beforeSt.Mtim
			if moved != tc.touched {
				t.Errorf("mtime moved = %v, want %v", moved, tc.touched)
			}
			if time.Unix(afterSt.Mtim.Unix()).Before(time.Unix(beforeSt.Mtim.Unix())) {
				t.Errorf("mtime moved backwards")
			}
			entriesAfter, _ := os.ReadDir(dir)
			if len(entriesAfter) != len(entries) {
				t.Errorf("directory entries %d -> %d: something was created or removed", len(entries), len(entriesAfter))
			}
			var wantEv []string
			if tc.touched {
				wantEv = []string{rel + ":attrib"}
			}
			if diff := cmp.Diff(wantEv, gotEv); diff != "" {
				t.Errorf("file system events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFixAsOwner: a touch refused to root (root_squash) is retried with
// the owner's ids, and a file refused both ways is logged once only.
func TestFixAsOwner(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	os.Chown(p, 4242, 4242)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	dfd, _ := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	defer unix.Close(dfd)

	sys := &faultySys{Sys: realSys{}, touchErr: unix.EPERM}
	fx := NewFixer(time.Second, time.Now, discardLogger())
	fx.AsOwner, fx.Sys = true, sys
	// The real TouchAs: as uid 4242 the touch is allowed (owner).
	sys.touchAsErr = nil
	if r := fx.Fix(dfd, "f", nil); r.Outcome != Fixed || sys.touchAs != 1 {
		t.Fatalf("Fix = %s (%v), TouchAs calls %d; want fixed through the owner", r.Outcome, r.Err, sys.touchAs)
	}
	if err := (realSys{}).TouchAs(mustOpenPath(t, p), 4242, 4242); err != nil {
		t.Errorf("real TouchAs as the owner: %v", err)
	}
	// As another unprivileged user without write permission: refused.
	if err := (realSys{}).TouchAs(mustOpenPath(t, p), 4343, 4343); err == nil {
		t.Errorf("real TouchAs as a stranger succeeded")
	}
	// No thread of this process may be left with another fsuid.
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, st := range tasks {
		b, _ := os.ReadFile(st)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") && f[4] != "0" {
				t.Errorf("%s: %s: a thread kept the owner's ids", st, line)
			}
		}
	}

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	fx.AsOwner = false
	d, m := newTestDaemon(t, Options{Roots: []string{dir}}, time.Second)
	d.fixer, d.log = fx, log
	fx.Sys = &faultySys{Sys: realSys{}, touchErr: unix.EACCES}
	os.Chtimes(p, old, old)
	pending := map[string]*item{}
	var h itemHeap
	for i := 0; i < 3; i++ {
		r := fx.Fix(dfd, "f", nil)
		it := &item{path: p, index: -1}
		pending[p] = it
		d.onResult(done{it: it, res: r, at: time.Now()}, pending, &h)
	}
	if got := strings.Count(logs.String(), "cannot touch"); got != 1 {
		t.Errorf("logged %d times, want once:\n%s", got, logs.String())
	}
	if got := skips(m, "permission"); got != 3 {
		t.Errorf("permission skips = %v, want 3", got)
	}
	if len(pending) != 0 || len(h) != 0 {
		t.Errorf("a refused file is retried: pending %d, scheduled %d", len(pending), len(h))
	}
}

func mustOpenPath(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}
