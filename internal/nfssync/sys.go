package nfssync

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Stat is what the fixer needs to know about a file.
type Stat struct {
	Dev, Ino   uint64
	Mode       uint32
	Uid, Gid   uint32
	Size       int64
	Atime      time.Time
	Mtime      time.Time
	Ctime      time.Time
	MountID    uint64
	hasMountID bool
}

// IsRegular reports whether the file is a plain file.
func (s Stat) IsRegular() bool { return s.Mode&unix.S_IFMT == unix.S_IFREG }

// sameFile reports whether a and b describe the same unchanged file: same
// inode, size and ctime.
func sameFile(a, b Stat) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size && a.Ctime.Equal(b.Ctime)
}

// Sys is the set of system calls the fixer makes. The real one is
// realSys; tests wrap it to inject the errors a real NFS server gives.
type Sys interface {
	// OpenPath opens rel beneath dirfd with O_PATH, refusing symlinks
	// anywhere on the way (ELOOP) and mount crossings (EXDEV).
	OpenPath(dirfd int, rel string) (int, error)
	// Stat returns the attributes of fd; force asks the server.
	Stat(fd int, force bool) (Stat, error)
	// Touch sets fd's atime and mtime to the server's current time, as
	// utimensat(fd, NULL) does: write permission suffices.
	Touch(fd int) error
	// TouchAs is Touch with the file system uid and gid switched.
	TouchAs(fd int, uid, gid uint32) error
	Close(fd int) error
}

type realSys struct{}

func (realSys) OpenPath(dirfd int, rel string) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_BENEATH,
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		return fd, err
	}
}

func (realSys) Stat(fd int, force bool) (Stat, error) {
	flags := unix.AT_EMPTY_PATH | unix.AT_SYMLINK_NOFOLLOW
	if force {
		flags |= unix.AT_STATX_FORCE_SYNC
	}
	var x unix.Statx_t
	if err := unix.Statx(fd, "", flags, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &x); err != nil {
		return Stat{}, err
	}
	ts := func(t unix.StatxTimestamp) time.Time { return time.Unix(t.Sec, int64(t.Nsec)) }
	return Stat{
		Dev:        unix.Mkdev(x.Dev_major, x.Dev_minor),
		Ino:        x.Ino,
		Mode:       uint32(x.Mode),
		Uid:        x.Uid,
		Gid:        x.Gid,
		Size:       int64(x.Size),
		Atime:      ts(x.Atime),
		Mtime:      ts(x.Mtime),
		Ctime:      ts(x.Ctime),
		MountID:    x.Mnt_id,
		hasMountID: x.Mask&unix.STATX_MNT_ID != 0,
	}, nil
}

var emptyPath = [1]byte{0}

func (realSys) Touch(fd int) error {
	// utimensat(fd, "", NULL, AT_EMPTY_PATH): times NULL means "now" on
	// the server and needs write permission only, not ownership.
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), uintptr(unsafe.Pointer(&emptyPath[0])), 0, unix.AT_EMPTY_PATH, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// TouchAs runs Touch on a thread of its own whose fsuid and fsgid are
// the file owner's. The thread is discarded afterwards if it cannot be
// switched back, so no other goroutine ever runs with those ids.
func (s realSys) TouchAs(fd int, uid, gid uint32) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Without UnlockOSThread the thread exits with this goroutine.
		// setfsuid/setfsgid return the previous id and give no error.
		unix.Setfsgid(int(gid))
		unix.Setfsuid(int(uid))
		err := s.Touch(fd)
		unix.Setfsuid(0)
		unix.Setfsgid(0)
		if cur, _ := unix.SetfsuidRetUid(-1); cur == 0 {
			if g, _ := unix.SetfsgidRetGid(-1); g == 0 {
				runtime.UnlockOSThread()
			}
		}
		done <- err
	}()
	if err := <-done; err != nil {
		return fmt.Errorf("as uid %d: %w", uid, err)
	}
	return nil
}

func (realSys) Close(fd int) error { return unix.Close(fd) }
