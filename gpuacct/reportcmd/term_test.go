package reportcmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/pty"
)

// openPTY returns a new pseudo-terminal's slave end, cols wide.
func openPTY(t *testing.T, cols uint16) *os.File {
	_, slave := pty.Open(t)
	pty.Resize(t, slave, cols, 24)
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
