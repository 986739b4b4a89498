package reportcmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal's slave end, cols wide.
func openPTY(t *testing.T, cols uint16) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pseudo-terminal number: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pseudo-terminal: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pseudo-terminal slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: 24}); err != nil {
		t.Fatalf("set terminal size: %v", err)
	}
	return slave
}

// TestTermWidth: only a terminal has a width; $COLUMNS wins over the
// terminal's own, and a terminal that reports none is 80 wide.
func TestTermWidth(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name    string
		w       func(t *testing.T) io.Writer
		columns string
		tty     bool
		width   int
	}{
		{name: "buffer", w: func(*testing.T) io.Writer { return &bytes.Buffer{} }, columns: "100"},
		{name: "file", w: func(*testing.T) io.Writer { return file }, columns: "100"},
		{name: "terminal", w: func(t *testing.T) io.Writer { return openPTY(t, 132) }, tty: true, width: 132},
		{name: "terminal and COLUMNS", w: func(t *testing.T) io.Writer { return openPTY(t, 132) }, columns: "100", tty: true, width: 100},
		{name: "terminal and bad COLUMNS", w: func(t *testing.T) io.Writer { return openPTY(t, 132) }, columns: "wide", tty: true, width: 132},
		{name: "terminal without a size", w: func(t *testing.T) io.Writer { return openPTY(t, 0) }, tty: true, width: 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w(t)
			getenv := func(k string) string {
				if k == "COLUMNS" {
					return tc.columns
				}
				return ""
			}
			if got := isTerminal(w); got != tc.tty {
				t.Errorf("isTerminal = %v, want %v", got, tc.tty)
			}
			if got := termWidth(w, getenv); got != tc.width {
				t.Errorf("termWidth = %d, want %d", got, tc.width)
			}
		})
	}
}
