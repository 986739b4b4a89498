package demo

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadInfoFIFO: a FIFO where demo.json belongs is refused at once
// with the one-line hint, not waited on for a writer that never comes.
func TestReadInfoFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, infoFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, dbFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadInfo(dir); done <- err }()
	select {
	case err := <-done:
		if want := "(demo.json is not a regular file)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want one with %q", err, want)
		}
	case <-time.After(time.Minute):
		// Let the blocked open through (a writer arrives), then fail.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("ReadInfo still waits on the FIFO after a minute")
	}
}
