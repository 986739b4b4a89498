// Package servecmd is `gpuacct serve`: the ingest daemon composed with the web
// dashboard and JSON API on one HTTP mux. It is composed here, so that
// internal/ingest does not know internal/web.
//
// Files: serve.go (Main: flags, the writer lock, the ingest loop and the
// web), front.go (the one mux: /metrics beside the dashboard), standby.go
// (systemd's READY, STATUS and watchdog while serve waits for the lock or
// serves read-only), replica.go (a read-only serve's replica lag, on a
// PostgreSQL standby).
package servecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/ingestcmd"
	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/web"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// Main is the daemon's life: ParseFlags, Run, Close.
type Main struct {
	Stderr io.Writer
	Getenv func(string) string
	Config config.Config
	// Addr, when not nil, is sent the address /metrics listens on.
	Addr chan string
	// ReadOnly serves the dashboard, the API, the board and /metrics from
	// a read-only store: no ingest, no writer lock, as many as wanted.
	ReadOnly bool

	setup *ingest.Setup
}

// ParseFlags reads the config file and the flags into m.Config.
func (m *Main) ParseFlags(c *cli.Context) error {
	cfg, err := ingestcmd.Config(c, m.Getenv)
	if err != nil {
		return err
	}
	if c.IsSet("web-config-file") {
		cfg.Web.ConfigFile = c.String("web-config-file")
	}
	if err := webconfig.Check(cfg.Web.ConfigFile, "web.config_file, --web-config-file"); err != nil {
		return err
	}
	m.Config = cfg
	return nil
}

// errLostLock ends Run when the writer lock is gone: exiting non-zero
// lets systemd start serve again, and the new one waits for the lock.
var errLostLock = errors.New("the ledger's writer lock is lost (connection to the database ended; another writer may hold it now): exiting so that the restarted serve waits for it")

// Run starts /metrics, opens the writer store (waiting while another
// writer holds it) and serves until ctx ends: passes, /metrics (with
// gpusuite_build_info), the dashboard and API, systemd notify and
// watchdog.
func (m *Main) Run(ctx context.Context) error {
	s, err := ingest.Prepare(m.Config, m.Stderr, m.Getenv, "gpuacct-serve")
	if err != nil {
		return err
	}
	m.setup = s
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector("gpusuite"))
	gauges := newWriterGauges(reg, s.Config.Store.URL)
	f := newFront(reg)
	stopHTTP, err := f.listen(ctx, s.Config.Ingest.MetricsListen, s.Config.Web, m.Addr, s.Log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	sb := newStandby(ctx, s.Log)
	if m.ReadOnly {
		return m.runReadOnly(ctx, s, reg, f, sb)
	}
	err = s.OpenStore(ctx, ingest.Writer{Wait: true, OnWait: func(holder string) {
		s.Log.Warn("another writer holds the ledger: " + holder + "; waiting to take over")
		gauges.waiting.Set(1)
		sb.waiting(holder)
	}})
	sb.stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting
		}
		return err
	}
	gauges.waiting.Set(0)
	// The request queues are the service user's whoever files first: made
	// here, not by the first command run.
	if dir := s.Config.Report.Requests; dir != "" {
		if err := requests.MakeQueues(dir, s.Deps.UID); err != nil {
			s.Log.Error("request queues not ready: ignore and note requests may not be applied", "dir", dir, "err", err)
		}
	}
	stop, err := mountBoard(ctx, s, reg, f)
	if err != nil {
		return err
	}
	defer stop()
	s.Deps.Metrics = ingest.NewMetrics(reg, time.Now)
	// The ingest server's own listener stays off: front serves /metrics.
	icfg := s.Config
	icfg.Ingest.MetricsListen = ""
	srv := ingest.NewServer(ingest.New(s.Deps), icfg, reg, s.Log, m.Getenv)
	bud, closeBudgets, err := openBudgets(ctx, s, reg)
	if err != nil {
		return err
	}
	defer closeBudgets()
	srv.AfterPass = bud.afterPass(s, notifier(s, reg, bud.source()))
	f.ready.Store(true)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := s.LostLock(runCtx, s.Config.Ingest.Interval.Duration)
	go func() {
		select {
		case <-lost:
			s.Log.Error("lost the ledger's writer lock; stopping")
			cancel()
		case <-runCtx.Done():
		}
	}()
	if err := srv.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	select {
	case <-lost:
		return errLostLock
	default:
	}
	return nil
}

// runReadOnly is serve without ingest: the board, the dashboard, the API
// and /metrics over a read-only store, until ctx ends. It takes no lock,
// so any number may run, on any host that reaches the ledger: a
// dashboard that stays up while the writer's head server is patched.
func (m *Main) runReadOnly(ctx context.Context, s *ingest.Setup, reg *prometheus.Registry, f *front, sb *standby) error {
	stop, err := mountBoard(ctx, s, reg, f)
	if err != nil {
		return err
	}
	defer stop()
	closeLag, err := registerReplicaLag(ctx, s.Config, reg, s.Log)
	if err != nil {
		return err
	}
	defer closeLag()
	f.ready.Store(true)
	s.Log.Info("serving read-only: no ingest", "store", store.RedactURL(s.Config.Store.Location()))
	sb.ready("read-only: the dashboard, API and board; no ingest")
	<-ctx.Done()
	return nil
}

// mountBoard starts the live board (its Slurm timer, its metrics) and
// mounts the dashboard and API on f: what a writing and a read-only
// serve share. stop unmounts and closes the board's store.
func mountBoard(ctx context.Context, s *ingest.Setup, reg *prometheus.Registry, f *front) (stop func(), err error) {
	src, closeNotes, err := liveBoard(ctx, s.Config, s.Log)
	if err != nil {
		return nil, err
	}
	// Slurm is re-read on the source's timer, whoever looks at the board.
	go src.Run(ctx)
	reg.MustRegister(board.NewCollector(src, s.Config.Board.IdleAlert.Duration))
	stopWeb, err := web.Mount(ctx, s.Config, src, f.Handle, s.Log)
	if err != nil {
		closeNotes()
		return nil, err
	}
	return func() { stopWeb(); closeNotes() }, nil
}

// liveBoard is the one board.Source of the process: the agents'
// snapshots of board.live_dir, Slurm read every board.slurm_interval, and
// the notes in force from a read-only store (the writer's connection is
// ingest's alone). The returned close closes that store.
func liveBoard(ctx context.Context, cfg config.Config, log *slog.Logger) (*board.Source, func(), error) {
	st, err := store.Open(ctx, store.Options{Path: cfg.Store.Path, URL: cfg.Store.URL, ReadOnly: true, BusyTimeout: cfg.Store.BusyTimeout.Duration})
	if err != nil {
		return nil, nil, fmt.Errorf("open store %q for the board's notes: %w", store.RedactURL(cfg.Store.Location()), err)
	}
	src := board.NewSource(board.SourceOptions{
		LiveDir:       cfg.Board.LiveDir,
		Cluster:       cfg.Cluster.Name,
		Slurm:         slurmstate.Reader{Timeout: cfg.Board.SlurmTimeout.Duration}.Read,
		SlurmInterval: cfg.Board.SlurmInterval.Duration,
		SlurmTimeout:  cfg.Board.SlurmTimeout.Duration,
		Notes:         notes.InForce(st),
		// Under the event stream's tick (web.DefaultBoardTick), so each
		// tick sees a new build; still one build for all who ask at once.
		MaxAge: web.DefaultBoardTick / 2,
		Log:    log,
	})
	// A board without its last hour only shows gaps until the agents fill
	// it again; serve starts anyway.
	if err := fillLastHour(ctx, st, src, time.Now()); err != nil {
		log.Warn("the board's last hour is not read back from the ledger", "err", err)
	}
	return src, func() { _ = st.Close() }, nil
}

// Close closes the store Run opened.
func (m *Main) Close() error {
	if m.setup == nil {
		return nil
	}
	return m.setup.Close()
}

// Command is `gpuacct serve`: the ingest daemon.
func Command(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "ingest daemon: pass after pass, /metrics, the live board and dashboard, systemd notify and watchdog",
		UsageText: `gpuacct serve [options]

Runs an ingest pass whenever a node directory changes (fsnotify, where the
file system reports it) and at least every --interval. Holds the ledger's
writer lock for its whole life: a second ingest refuses to start, a second
serve waits (/metrics answers meanwhile, gpuacct_store_writer_waiting 1)
and takes over when the first ends; a serve that loses the lock (its
PostgreSQL session ended) exits 1. --read-only serves the board, the
dashboard, the API and /metrics without ingest or lock: any number may
run beside the writer (on PostgreSQL, on any host that reaches it).
Under systemd (Type=notify, WatchdogSec=) it reports readiness after the
first pass and pings the watchdog; SIGTERM finishes the current batch and
exits 0. With web.enabled it serves the dashboard: the live board at /
(board.live_dir's snapshots, Slurm re-read every board.slurm_interval) and
the accounting at /accounting, with /api/v1/ (docs/api.md).

Examples:
   systemctl enable --now gpuacct-serve            # packaging/systemd/gpuacct-serve.service
   gpuacct serve --interval 10s --metrics-listen 127.0.0.1:9466
   gpuacct serve --store-url postgres://gpusuite@db.example.org/gpusuite?sslmode=verify-full
   gpuacct serve --read-only --metrics-listen :9467  # a second dashboard, no ingest
   curl -s localhost:9466/metrics | grep gpuacct_ingest
   curl -s localhost:9466/api/v1/free`,
		Flags: append(ingestcmd.Flags(),
			&cli.DurationFlag{Name: "interval", Usage: "longest time between passes (ingest.interval)", EnvVars: []string{"GPUSUITE_INGEST_INTERVAL"}},
			&cli.StringFlag{Name: "metrics-listen", Usage: "address of /metrics, \"\" for none (ingest.metrics_listen)", EnvVars: []string{"GPUSUITE_METRICS_LISTEN"}},
			&cli.StringFlag{Name: "web-config-file", Usage: "Prometheus web config `FILE` (TLS, basic auth, headers) for every address serve listens on (web.config_file)", EnvVars: []string{"GPUSUITE_WEB_CONFIG_FILE"}},
			&cli.BoolFlag{Name: "read-only", Usage: "serve the board, dashboard, API and /metrics from a read-only store: no ingest, no writer lock (any number may run)", EnvVars: []string{"GPUSUITE_SERVE_READ_ONLY"}},
		),
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			m := &Main{Stderr: stderr, Getenv: getenv, ReadOnly: c.Bool("read-only")}
			if err := m.ParseFlags(c); err != nil {
				return err
			}
			defer m.Close()
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return m.Run(ctx)
		}),
	}
}

// notifier is the notifier's turn after each ingest pass when
// notify.enabled (docs/notify.md); nil otherwise, and when it cannot
// start: accounting goes on without it (an unreadable password or
// addresses file stops no ingest), the log says why.
func notifier(s *ingest.Setup, reg *prometheus.Registry, budgets notify.BudgetSource) func(ctx context.Context) {
	if !s.Config.Notify.Enabled {
		return nil
	}
	loc, err := timespec.LoadLocation(s.Config.Report.TZ)
	var n *notify.Notifier
	if err == nil {
		n, err = notify.New(s.Config.Notify, s.Store, notify.Options{Loc: loc, IdleThreshold: s.Config.Agent.IdleThreshold, Log: s.Log,
			Metrics: notify.NewMetrics(reg), TeamsFile: s.Config.Report.Teams, Budgets: budgets, Budget: s.Config.Budget})
	}
	if err != nil {
		s.Log.Error("notifier not started; ingest goes on without it", "err", err)
		return nil
	}
	return func(ctx context.Context) { n.RunDue(ctx, s.Deps.Now()) }
}
