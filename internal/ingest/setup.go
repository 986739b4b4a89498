package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/logging"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/web"
)

func flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "db", Usage: "accounting database (store.path)", EnvVars: []string{"GPUSUITE_DB"}},
		&cli.StringFlag{Name: "incoming", Usage: "directory of per-node incoming directories (ingest.incoming)", EnvVars: []string{"GPUSUITE_INCOMING"}},
		&cli.StringFlag{Name: "quarantine", Usage: "where bad and refused files go (ingest.quarantine)", EnvVars: []string{"GPUSUITE_QUARANTINE"}},
		&cli.StringFlag{Name: "archive", Usage: "where ingested files go when keep=archive (ingest.archive)", EnvVars: []string{"GPUSUITE_ARCHIVE"}},
		&cli.StringFlag{Name: "keep", Usage: "archive or delete ingested files (ingest.keep)", EnvVars: []string{"GPUSUITE_INGEST_KEEP"}},
		&cli.StringFlag{Name: "service-user", Usage: "user that must own incoming files (ingest.service_user; default: the running user)", EnvVars: []string{"GPUSUITE_SERVICE_USER"}},
		&cli.StringFlag{Name: "sacct", Usage: "sacct program for unfinished jobs and job comments, \"\" to never ask (ingest.sacct)", EnvVars: []string{"GPUSUITE_SACCT"}},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (ingest.log_level)", EnvVars: []string{"GPUSUITE_LOG_LEVEL"}},
	}
}

// setup is what both commands share: config with flags applied, logger,
// open writer store, ingester.
type setup struct {
	cfg   config.Config
	log   *slog.Logger
	store *store.Store
	deps  Deps
}

func load(c *cli.Context, stderr io.Writer, getenv func(string) string, prog string) (*setup, error) {
	cfg, err := cliwire.LoadConfig(c, getenv)
	if err != nil {
		return nil, err
	}
	str := func(name string, dst *string) {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
	str("db", &cfg.Store.Path)
	str("incoming", &cfg.Ingest.Incoming)
	str("quarantine", &cfg.Ingest.Quarantine)
	str("archive", &cfg.Ingest.Archive)
	str("keep", &cfg.Ingest.Keep)
	str("service-user", &cfg.Ingest.ServiceUser)
	str("sacct", &cfg.Ingest.Sacct)
	str("log-level", &cfg.Ingest.LogLevel)
	if c.IsSet("interval") {
		cfg.Ingest.Interval = config.Dur(c.Duration("interval"))
	}
	if c.IsSet("metrics-listen") {
		cfg.Ingest.MetricsListen = c.String("metrics-listen")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	level, err := logging.ParseLevel(cfg.Ingest.LogLevel)
	if err != nil {
		return nil, err
	}
	log := logging.New(prog, stderr, level, getenv)
	uid := os.Getuid()
	if cfg.Ingest.ServiceUser != "" {
		u, err := user.Lookup(cfg.Ingest.ServiceUser)
		if err != nil {
			return nil, fmt.Errorf("service user %q: %w", cfg.Ingest.ServiceUser, err)
		}
		uid, _ = strconv.Atoi(u.Uid)
	}
	st, err := store.Open(c.Context, store.Options{Path: cfg.Store.Path, Journal: cfg.Store.JournalMode, BusyTimeout: cfg.Store.BusyTimeout.Duration})
	if err != nil {
		return nil, err
	}
	var sacct Sacct
	if cfg.Ingest.Sacct != "" {
		prog := cfg.Ingest.Sacct
		sacct = func(ctx context.Context, args ...string) ([]byte, error) {
			return exec.CommandContext(ctx, prog, args...).Output()
		}
	}
	return &setup{cfg: cfg, log: log, store: st, deps: Deps{
		Store: st, Config: cfg, Log: log, Now: time.Now, UID: uid, Sacct: sacct,
	}}, nil
}

// IngestCommand is `gpuacct ingest`: one pass, for cron or by hand.
func IngestCommand(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "ingest",
		Usage: "take every shipped record into the accounting database, once (one pass)",
		UsageText: `gpuacct ingest [options]

Reads <incoming>/<node>/ for every node, validates each file, stores its
records (a record already stored changes nothing), then archives or deletes
the file. Bad files go to quarantine/ with a .reason; files not owned by the
service user, or in a directory others can write, are refused the same way.
Exits non-zero when the pass could not finish (database locked by 'gpuacct
serve', disk full, ...); what was committed stays, the rest waits.

Examples:
   gpuacct ingest                                  # paths from /etc/gpusuite/gpusuite.toml
   gpuacct ingest --db /tmp/acct.db --incoming /tmp/incoming --keep delete
   */5 * * * * gpuacct gpuacct ingest              # crontab line, when serve is not used`,
		Flags: flags(),
		Action: func(c *cli.Context) error {
			s, err := load(c, stderr, getenv, "gpuacct-ingest")
			if err != nil {
				return err
			}
			defer s.store.Close()
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			in := New(s.deps)
			res, err := in.Pass(ctx)
			in.applyRequests(ctx)
			fmt.Fprintf(stdout, "files %d, records %d (new samples %d), duplicates %d, quarantined %d, refused %d, unfinished jobs closed %d, samples pruned %d\n",
				res.Files, res.Records, res.Samples, res.Duplicates, res.Quarantined, res.Refused, res.Closed, res.Pruned)
			if err != nil {
				return fmt.Errorf("ingest pass: %w", err)
			}
			return nil
		},
	}
}

// ServeCommand is `gpuacct serve`: the ingest daemon.
func ServeCommand(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "ingest daemon: pass after pass, /metrics, systemd notify and watchdog",
		UsageText: `gpuacct serve [options]

Runs an ingest pass whenever a node directory changes (fsnotify, where the
file system reports it) and at least every --interval. Holds the database's
writer lock for its whole life: a second serve or ingest refuses to start.
Under systemd (Type=notify, WatchdogSec=) it reports readiness after the
first pass and pings the watchdog; SIGTERM finishes the current batch and
exits 0.

Examples:
   systemctl enable --now gpuacct-serve            # packaging/systemd/gpuacct-serve.service
   gpuacct serve --interval 10s --metrics-listen 127.0.0.1:9466
   curl -s localhost:9466/metrics | grep gpuacct_ingest`,
		Flags: append(flags(),
			&cli.DurationFlag{Name: "interval", Usage: "longest time between passes (ingest.interval)", EnvVars: []string{"GPUSUITE_INGEST_INTERVAL"}},
			&cli.StringFlag{Name: "metrics-listen", Usage: "address of /metrics, \"\" for none (ingest.metrics_listen)", EnvVars: []string{"GPUSUITE_METRICS_LISTEN"}},
		),
		Action: func(c *cli.Context) error {
			s, err := load(c, stderr, getenv, "gpuacct-serve")
			if err != nil {
				return err
			}
			defer s.store.Close()
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			reg := prometheus.NewRegistry()
			s.deps.Metrics = NewMetrics(reg, time.Now)
			srv := NewServer(New(s.deps), s.cfg, reg, s.log, getenv)
			stopWeb, err := web.Mount(ctx, s.cfg, srv.Handle, s.log)
			if err != nil {
				return err
			}
			defer stopWeb()
			if err := srv.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
}
