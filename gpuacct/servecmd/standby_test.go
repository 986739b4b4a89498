package servecmd

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStandbyNotifies: a serve waiting for the lock tells systemd it is
// a ready standby, keeps its watchdog fed, and says when it writes.
func TestStandbyNotifies(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "100000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	read := func() string {
		t.Helper()
		buf := make([]byte, 4096)
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb := newStandby(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sb.waiting("gpuacct pid 7 on head1")
	if got := read(); !strings.HasPrefix(got, "READY=1\nSTATUS=standby: ") || !strings.Contains(got, "gpuacct pid 7 on head1") {
		t.Fatalf("first notification %q, want READY=1 and the standby status naming the holder", got)
	}
	for i := 0; i < 2; i++ {
		if got := read(); got != "WATCHDOG=1" {
			t.Fatalf("notification %q while waiting, want WATCHDOG=1", got)
		}
	}
	sb.stop()
	for {
		got := read()
		if got == "WATCHDOG=1" {
			continue // a tick that raced stop
		}
		if got != "STATUS=writing the ledger" {
			t.Fatalf("notification %q after the lock is taken, want the writing status", got)
		}
		break
	}
}
