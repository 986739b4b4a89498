package servecmd

import (
	"context"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// standby keeps systemd content while serve waits for the writer lock,
// and for the whole life of a read-only serve:
// a waiting serve is a started standby (it answers /metrics), so it
// tells systemd READY with a STATUS saying whom it waits for, and pings
// the watchdog until stop is called. Without this, systemd's start
// timeout, then its watchdog, would kill and restart the standby again
// and again. Without NOTIFY_SOCKET every call does nothing.
type standby struct {
	log  *slog.Logger
	said chan string
	done chan struct{}
}

func newStandby(ctx context.Context, log *slog.Logger) *standby {
	s := &standby{log: log, said: make(chan string, 1), done: make(chan struct{})}
	go s.run(ctx)
	return s
}

// waiting is OnWait's: holder now holds the lock.
func (s *standby) waiting(holder string) {
	s.ready("standby: waiting for the ledger's writer lock, held by " + holder)
}

// ready tells systemd the process is up, in the words of status, and
// starts feeding the watchdog.
func (s *standby) ready(status string) {
	select {
	case s.said <- status:
	default:
	}
}

// stop ends the standby: serve holds the lock (or gave up).
func (s *standby) stop() { close(s.done) }

func (s *standby) notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		s.log.Warn("systemd notify failed", "state", state, "err", err)
	}
}

func (s *standby) run(ctx context.Context) {
	every := time.Duration(0)
	if d, err := daemon.SdWatchdogEnabled(false); err == nil && d > 0 {
		every = d / 2
	}
	var tick <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			s.notify("STATUS=writing the ledger")
			return
		case status := <-s.said:
			s.notify(daemon.SdNotifyReady + "\nSTATUS=" + status)
			if every > 0 && tick == nil {
				t := time.NewTicker(every)
				defer t.Stop()
				tick = t.C
			}
		case <-tick:
			s.notify(daemon.SdNotifyWatchdog)
		}
	}
}
