package nfssync

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// FixFile fixes one file named by path, waiting as long as needed: the
// directory part may contain symlinks the user chose, the file itself may
// not be one.
func FixFile(ctx context.Context, fx *Fixer, path string) (Result, error) {
	dir, base := filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "/" || base == "." || base == ".." {
		return Result{Outcome: SkipNotRegular, Why: "not a regular file"}, nil
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errResult(err, "open directory "+dir), nil
	}
	defer unix.Close(dfd)
	var prev *Stat
	for attempt := 0; ; {
		r := fx.Fix(dfd, base, prev)
		switch r.Outcome {
		case Wait:
			st := r.Before
			prev = &st
		case NotMoved:
			if attempt++; attempt >= 3 {
				return r, nil
			}
		default:
			return r, nil
		}
		t := time.NewTimer(time.Until(r.Retry))
		select {
		case <-ctx.Done():
			t.Stop()
			return r, fmt.Errorf("interrupted while waiting to touch %q", path)
		case <-t.C:
		}
	}
}

// Watchdog pings systemd while the daemon's loop answers.
func Watchdog(ctx context.Context, d *Daemon, log *slog.Logger) {
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every <= 0 {
		return
	}
	ticks(ctx, every/3, func() {
		if d.Alive(ctx, every/3) {
			daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		} else {
			log.Error("the daemon's loop is stuck; not pinging the watchdog")
		}
	})
}

// Recalibrate measures the window again every so often.
func Recalibrate(ctx context.Context, fx *Fixer, m *Metrics, log *slog.Logger, probe string, every time.Duration) {
	ticks(ctx, every, func() {
		cal, err := Calibrate(ctx, realSys{}, probe, time.Now, 5)
		if err != nil {
			log.Warn("calibration failed, keeping the window", "err", err, "window", fx.Window())
			return
		}
		fx.SetWindow(cal.Window)
		m.Window.Set(cal.Window.Seconds())
	})
}

// ticks calls f every period until ctx ends.
func ticks(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// OS is the real system, for Calibrate.
func OS() Sys { return realSys{} }
