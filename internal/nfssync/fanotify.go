package nfssync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fanotifySource puts one mark on the file system (or, failing that, the
// mount) of each watched directory and reads FAN_CLOSE_WRITE events: no
// per-directory watches, no limit, but it needs CAP_SYS_ADMIN.
type fanotifySource struct {
	eventFile
	env   sourceEnv
	noFds int
}

func newFanotify(roots []string, env sourceEnv) (*fanotifySource, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK,
		unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: fanotify_init: %w (needs root)", errUnavailable, err)
	}
	for _, r := range roots {
		// A file system mark sees writes through every mount of the file
		// system: bind mounts into enroot containers and other mount
		// namespaces included. A mount mark, the fallback, sees only
		// this namespace's mount.
		err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_FILESYSTEM, unix.FAN_CLOSE_WRITE, unix.AT_FDCWD, r)
		if err != nil {
			env.log.Info("fanotify file system mark refused, marking the mount only (writes through bind mounts in containers are not seen)", "dir", r, "err", err)
			err = unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_MOUNT, unix.FAN_CLOSE_WRITE, unix.AT_FDCWD, r)
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%w: fanotify mark on %q: %w", errUnavailable, r, err)
		}
	}
	return &fanotifySource{eventFile: eventFile{f: os.NewFile(uintptr(fd), "fanotify")}, env: env}, nil
}

func (s *fanotifySource) Name() string { return "fanotify" }

func (s *fanotifySource) Run(ctx context.Context, emit func(string), overflow func()) error {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	buf := make([]byte, 256*1024)
	link := make([]byte, 0, 64)
	target := make([]byte, unix.PathMax)
	const metaSize = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))
	for {
		n, err := s.f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			// The kernel could not open the file for the event (root
			// squashed on NFS, say): the event is lost.
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESTALE) {
				s.noFds++
				if s.noFds == 1 {
					s.env.log.Warn("fanotify could not open a written file, its event is lost; with root_squash set nfssync.backend = \"inotify\"", "err", err)
				}
				continue
			}
			return fmt.Errorf("read fanotify: %w", err)
		}
		for off := 0; off+metaSize <= n; {
			m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[off]))
			if m.Event_len < uint32(metaSize) {
				break
			}
			off += int(m.Event_len)
			if m.Mask&unix.FAN_Q_OVERFLOW != 0 {
				overflow()
			}
			if m.Fd < 0 {
				continue
			}
			link = strconv.AppendInt(append(link[:0], "/proc/self/fd/"...), int64(m.Fd), 10)
			k, rerr := unix.Readlink(string(link), target)
			unix.Close(int(m.Fd))
			if rerr != nil {
				continue
			}
			emit(string(target[:k]))
		}
	}
}
