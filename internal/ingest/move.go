package ingest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/spool"
)

// moveFile moves src into dir under base, or base.1, base.2, ... when
// that name is taken, and returns where it went. Within a file system it
// renames; across file systems (archive or quarantine on another mount:
// rename fails with EXDEV) it copies to a temporary name in dir, fsyncs,
// links the copy into place (a link never replaces), fsyncs dir, and only
// then removes src, so a crash at any point leaves the file in incoming,
// in dir, or in both (the next pass sees a duplicate), never in neither.
func moveFile(src, dir, base string) (string, error) {
	var copied string // the temporary copy in dir, once made
	defer func() {
		if copied != "" {
			os.Remove(copied)
		}
	}()
	for i := 0; i < 1000; i++ {
		dst := filepath.Join(dir, base)
		if i > 0 {
			dst = filepath.Join(dir, fmt.Sprintf("%s.%d", base, i))
		}
		if copied == "" {
			if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
				continue // taken (or unknown): try the next name
			}
			err := os.Rename(src, dst)
			if err == nil {
				return dst, spool.SyncDir(dir)
			}
			if !errors.Is(err, syscall.EXDEV) {
				return "", err
			}
			if copied, err = copyTemp(src, dir, base); err != nil {
				return "", err
			}
		}
		err := os.Link(copied, dst)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("link %s into place: %w", dst, err)
		}
		if err := os.Remove(copied); err != nil {
			return "", err
		}
		copied = ""
		if err := spool.SyncDir(dir); err != nil {
			return "", err
		}
		if err := os.Remove(src); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return dst, fmt.Errorf("remove %s after copying it to %s: %w", src, dst, err)
		}
		return dst, spool.SyncDir(filepath.Dir(src))
	}
	return "", fmt.Errorf("no free name for %s in %s", base, dir)
}

// copyTemp copies src (not following a link) into a new hidden file in
// dir with src's mode and modification time, fsynced.
func copyTemp(src, dir, base string) (string, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", src)
	}
	out, err := os.CreateTemp(dir, "."+base+".*")
	if err != nil {
		return "", err
	}
	tmp := out.Name()
	err = func() error {
		if _, err := io.Copy(out, in); err != nil {
			return err
		}
		if err := out.Chmod(st.Mode().Perm()); err != nil {
			return err
		}
		// Keep the time it was written: check and admins date files by it.
		if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
			return err
		}
		return out.Sync()
	}()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("copy %s to %s: %w", src, dir, err)
	}
	return tmp, nil
}

// leave notes err as a reason a file stays in incoming and returns it.
func (in *Ingester) leave(err error) error {
	in.leftMu.Lock()
	if in.leftErr == nil {
		in.leftErr = err
	}
	in.leftMu.Unlock()
	return err
}

// leftBehind counts the files of this pass still in incoming after it
// (one directory read per node) into res, and returns the error that
// makes such a pass fail: a file that cannot be archived, quarantined or
// read would otherwise stay there for ever behind passes that look fine.
func (in *Ingester) leftBehind(files, refused []file, res *Result) error {
	listed := map[string]map[string]bool{} // node directory -> names
	for _, fs := range [][]file{files, refused} {
		for _, f := range fs {
			dir := filepath.Dir(f.path)
			if listed[dir] == nil {
				listed[dir] = map[string]bool{}
			}
			listed[dir][f.name] = true
		}
	}
	for dir, names := range listed {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // the node directory is gone: nothing left in it
		}
		for _, e := range ents {
			if !names[e.Name()] {
				continue // arrived during the pass
			}
			if in.deferred[filepath.Join(dir, e.Name())] {
				continue // waits for its job's event (rejected)
			}
			st, err := os.Lstat(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			res.Left++
			if res.OldestLeft.IsZero() || st.ModTime().Before(res.OldestLeft) {
				res.OldestLeft = st.ModTime()
			}
		}
	}
	if res.Left == 0 {
		return nil
	}
	in.leftMu.Lock()
	why := in.leftErr
	in.leftMu.Unlock()
	if why == nil {
		why = errors.New("they could not be read (see the log)")
	}
	return fmt.Errorf("%d files left in incoming, the oldest from %s: %w", res.Left, res.OldestLeft.UTC().Format(time.RFC3339), why)
}
