package pty

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// TestOpen: the slave end is a terminal of the size Resize gave it, and
// what the master writes, the slave reads.
func TestOpen(t *testing.T) {
	master, slave := Open(t)
	if !term.IsTerminal(int(slave.Fd())) {
		t.Fatal("the slave end is not a terminal")
	}
	Resize(t, slave, 132, 40)
	ws, err := unix.IoctlGetWinsize(int(slave.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Col != 132 || ws.Row != 40 {
		t.Errorf("size %dx%d, want 132x40", ws.Col, ws.Row)
	}
	if _, err := master.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	// Bounded: a pty that lost the line fails the test, not hangs it.
	if err := slave.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := slave.Read(buf)
	if err != nil || string(buf[:n]) != "hi\n" {
		t.Errorf("slave read %q, %v; want \"hi\\n\"", buf[:n], err)
	}
}
