package spool

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular means ReadRegular found a directory, FIFO, device or
// socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge means the file's size is over ReadRegular's bound; nothing
// was read.
var ErrTooLarge = errors.New("larger than the bound")

// ErrGrew means the file's size was within the bound but it grew past it
// while ReadRegular read it.
var ErrGrew = errors.New("grew past the bound while read")

// ReadRegular reads path, a file another process put in a shared place,
// the way every such read must: opened without following a link (an
// error matching syscall.ELOOP) or blocking on a FIFO, refused unless a
// regular file, at most max bytes held. Open, stat and read errors are
// os's own (*fs.PathError, whose Op names the step). The FileInfo is
// returned whenever the stat succeeded, refused or not, so that a caller
// can word the refusal for its own file (a request, a live snapshot,
// Slurm's view) or check the file further (its owner, its links).
func ReadRegular(path string, max int64) ([]byte, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, ErrNotRegular
	}
	if fi.Size() > max {
		return nil, fi, ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fi, err
	}
	if int64(len(data)) > max {
		return nil, fi, ErrGrew
	}
	return data, fi, nil
}
