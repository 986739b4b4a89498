package spool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		max     int64
		want    string
		wantErr error
		stat    bool // the FileInfo comes back
	}{
		{"within the bound", file, 10, "0123456789", nil, true},
		{"over the bound by its size", file, 9, "", ErrTooLarge, true},
		{"a link is not followed", link, 10, "", syscall.ELOOP, false},
		// a FIFO with no writer would block an open without O_NONBLOCK
		{"a FIFO", fifo, 10, "", ErrNotRegular, true},
		{"a directory", dir, 10, "", ErrNotRegular, true},
		{"missing", filepath.Join(dir, "none"), 10, "", fs.ErrNotExist, false},
		// /proc's files say size 0 and hold more: the read is still bounded
		{"grows past the bound", "/proc/self/status", 10, "", ErrGrew, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, fi, err := ReadRegular(tc.path, tc.max)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("ReadRegular(%q, %d) error = %v, want %v", tc.path, tc.max, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, string(data)); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if (fi != nil) != tc.stat {
				t.Errorf("FileInfo %v, want one: %v", fi, tc.stat)
			}
		})
	}
}
