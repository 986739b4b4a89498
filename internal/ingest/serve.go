package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// Server is the ingest daemon. Its HTTP mux serves /metrics when
// MetricsListen is set; gpuacct serve serves its HTTP elsewhere.
type Server struct {
	in     *Ingester
	cfg    config.Config
	log    *slog.Logger
	getenv func(string) string
	mux    *http.ServeMux
	// Addr is the address /metrics listens on once Run has started.
	Addr chan string
	// AfterPass, when set, runs after each pass on the loop's goroutine,
	// so that the writer's other work on the ledger (the notifier) never
	// shares the Store with a pass.
	AfterPass func(ctx context.Context)
}

// NewServer builds the daemon around an Ingester.
func NewServer(in *Ingester, cfg config.Config, reg *prometheus.Registry, log *slog.Logger, getenv func(string) string) *Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return &Server{in: in, cfg: cfg, log: log, getenv: getenv, mux: mux, Addr: make(chan string, 1)}
}

// notify sends a systemd notification; without NOTIFY_SOCKET it does nothing.
func (s *Server) notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		s.log.Warn("systemd notify failed", "state", state, "err", err)
	}
}

// watchdogInterval is systemd's WatchdogSec for this process, 0 when off.
func (s *Server) watchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		s.log.Warn("WATCHDOG_USEC unusable; watchdog off", "err", err)
		return 0
	}
	return d
}

// Run serves until ctx ends: passes, /metrics, notify, watchdog.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.Ingest.MetricsListen != "" {
		ln, err := net.Listen("tcp", s.cfg.Ingest.MetricsListen)
		if err != nil {
			return fmt.Errorf("metrics listen %q: %w", s.cfg.Ingest.MetricsListen, err)
		}
		s.Addr <- ln.Addr().String()
		httpSrv := webconfig.MetricsServer(s.mux)
		webconfig.Start(ln, httpSrv, "", s.log, "metrics")
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = httpSrv.Shutdown(sctx)
		}()
	}
	wake := make(chan struct{}, 1)
	if s.cfg.Ingest.Watch {
		if stop, err := s.watch(ctx, wake); err != nil {
			s.log.Info("fsnotify unavailable; polling only", "err", err)
		} else {
			defer stop()
		}
	}
	var wd <-chan time.Time
	if iv := s.watchdogInterval(); iv > 0 {
		t := time.NewTicker(iv / 2)
		defer t.Stop()
		wd = t.C
	}
	ticker := time.NewTicker(s.cfg.Ingest.Interval.Duration)
	defer ticker.Stop()
	s.log.Info("serving", "db", s.in.d.Store.Path, "journal", s.in.d.Store.Journal, "incoming", s.cfg.Ingest.Incoming, "interval", s.cfg.Ingest.Interval.Duration)
	ready := false
	for {
		res, err := s.in.Pass(ctx)
		s.in.applyRequests(ctx)
		switch {
		case errors.Is(err, ErrStopped) || ctx.Err() != nil:
		case err != nil:
			s.log.Error("ingest pass failed; retrying next pass", "err", err)
		case res.Files+res.Quarantined+res.Refused+res.Closed > 0:
			s.log.Info("pass", "files", res.Files, "records", res.Records, "samples", res.Samples, "duplicates", res.Duplicates,
				"quarantined", res.Quarantined, "refused", res.Refused, "closed", res.Closed)
		}
		if !ready {
			s.notify(daemon.SdNotifyReady)
			ready = true
		}
		s.notify(daemon.SdNotifyWatchdog)
		if s.AfterPass != nil && ctx.Err() == nil {
			s.AfterPass(ctx)
		}
	wait:
		select {
		case <-ctx.Done():
			s.notify(daemon.SdNotifyStopping)
			s.log.Info("stopping")
			return nil
		case <-wd:
			s.notify(daemon.SdNotifyWatchdog)
			goto wait
		case <-ticker.C:
		case <-wake:
			// Let a burst of arriving files settle into one pass.
			select {
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
}

// watch wakes the loop when files arrive in a node directory. On NFS the
// kernel sees only this host's writes, so polling stays the backstop.
func (s *Server) watch(ctx context.Context, wake chan<- struct{}) (func(), error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	root := s.cfg.Ingest.Incoming
	if err := w.Add(root); err != nil {
		w.Close()
		return nil, err
	}
	if ents, err := os.ReadDir(root); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				_ = w.Add(filepath.Join(root, e.Name()))
			}
		}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Dir(ev.Name) == root && ev.Has(fsnotify.Create) {
					_ = w.Add(ev.Name) // a new node directory
				}
				if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Write) {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				s.log.Warn("fsnotify", "err", err)
			}
		}
	}()
	return func() { w.Close() }, nil
}
