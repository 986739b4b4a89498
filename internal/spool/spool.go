// Package spool writes records durably to a node-local directory: a record
// is either wholly there or absent, never half-written, and once Write
// returns it survives a crash. Its other side, ReadRegular (read.go), is
// the one bounded read of a file another process put in a shared place:
// a request, a node's live snapshot, Slurm's view.
package spool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrExists means a record of the same name is already in the spool.
var ErrExists = errors.New("record already spooled")

// Dir is a spool directory.
type Dir struct {
	Path string
}

// Ensure creates the directory (0700) if it is missing and refuses one
// that others can write, since the ingest side trusts its contents.
func (d Dir) Ensure() error {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return fmt.Errorf("create spool %q: %w", d.Path, err)
	}
	st, err := os.Stat(d.Path)
	if err != nil {
		return fmt.Errorf("stat spool %q: %w", d.Path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("spool %q is not a directory", d.Path)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("spool %q is writable by group or others (mode %v): chmod 0700 it", d.Path, st.Mode().Perm())
	}
	return nil
}

// Write stores data under name: temp file, fsync, link into place (which
// never replaces an existing record), fsync the directory. It returns
// ErrExists, and leaves the first record alone, when name is taken.
func (d Dir) Write(name string, data []byte) error { return d.store(name, data, false) }

// Replace stores data under name like Write, but a record of the same name
// is replaced (for state files that are rewritten, such as checkpoints).
func (d Dir) Replace(name string, data []byte) error { return d.store(name, data, true) }

// store is Write, or with replace Replace.
func (d Dir) store(name string, data []byte, replace bool) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := put(d.Path, name, bytes.NewReader(data), 0o600, replace); err != nil {
		return err
	}
	return SyncDir(d.Path)
}

// CopyInto copies r to dir/name through a temp file that is fsync'd and
// renamed over any earlier copy, so a reader never sees a partial file. The
// caller fsyncs dir (once for a batch of files, with SyncDir).
func CopyInto(dir, name string, r io.Reader, mode fs.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	return put(dir, name, r, mode, true)
}

// ReplaceFile is CopyInto for a file that is no record (a hidden name
// checkName refuses, such as sbuild's metadata): put at path, whole or not
// at all. The caller fsyncs the directory if it must.
func ReplaceFile(path string, r io.Reader, mode fs.FileMode) error {
	return put(filepath.Dir(path), filepath.Base(path), r, mode, true)
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("spool record name %q is not a plain file name", name)
	}
	return nil
}

// put writes r to a temp file in dir, fsyncs it, and then renames it to
// name (replace) or links it there, failing with ErrExists if name is taken.
func put(dir, name string, r io.Reader, mode fs.FileMode, replace bool) error {
	tmp, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return fmt.Errorf("temporary file in %q: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // after a link or rename this is a no-op or drops the extra name
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("write %q: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %q: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %q: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %q: %w", tmp.Name(), err)
	}
	final := filepath.Join(dir, name)
	if replace {
		if err := os.Rename(tmp.Name(), final); err != nil {
			return fmt.Errorf("rename into %q: %w", final, err)
		}
		return nil
	}
	if err := os.Link(tmp.Name(), final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", final, ErrExists)
		}
		return fmt.Errorf("link %q: %w", final, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that names linked or renamed into it
// survive a crash.
func SyncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open dir %q: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync dir %q: %w", path, err)
	}
	return nil
}

// List returns the names of the complete records in the spool, sorted.
// Leftover temp files of a writer that crashed are not records.
func (d Dir) List() ([]string, error) {
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return nil, fmt.Errorf("list spool %q: %w", d.Path, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
