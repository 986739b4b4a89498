package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/logging"
	"github.com/aicloud/gpusuite/internal/nfssync"
	"github.com/aicloud/gpusuite/internal/webconfig"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"
)

const prog = "nfs-sync"

// Main runs the nfs-sync command line and returns the exit status.
func Main(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return MainContext(context.Background(), args, stdout, stderr, getenv)
}

// MainContext is Main ending when ctx ends (tests stop watch with it).
func MainContext(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return cliwire.Finish(prog, stderr, newApp(stdout, stderr, getenv).RunContext(ctx, args))
}

func onUsageError(name string) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			if len(rest) > 2 && rest[0] == '-' && rest[1] != '-' {
				rest = "-" + rest
			}
			msg = "unknown option " + rest
		}
		return cliwire.Usagef("%s (see %s --help)", msg, name)
	}
}

// newApp is nfs-sync's command tree, --version and the help's defaults
// from the config included.
func newApp(stdout, stderr io.Writer, getenv func(string) string) *cli.App {
	app := commands(stdout, stderr, getenv)
	cliwire.Version(app)
	cliwire.ConfigDefaults(app)
	return app
}

func commands(stdout, stderr io.Writer, getenv func(string) string) *cli.App {
	env := &cliEnv{stdout: stdout, stderr: stderr, getenv: getenv}
	windowFlag := &cli.DurationFlag{Name: "window", EnvVars: []string{"GPUSUITE_NFSSYNC_WINDOW"},
		Usage: "wait this long after a file's mtime before touching it (nfssync.window)"}
	dryRun := &cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "show what would be touched and why; touch nothing"}
	backend := &cli.StringFlag{Name: "backend", EnvVars: []string{"GPUSUITE_NFSSYNC_BACKEND"},
		Usage: "how closes are seen: auto, fanotify (root) or inotify (nfssync.backend)"}
	return &cli.App{
		Name:      prog,
		Usage:     "make same-second updates on the shared NFS /data visible on every server",
		UsageText: "nfs-sync [--config FILE] COMMAND [options] [arguments]",
		Description: `An NFS client keeps its cached copy of a file while the file's mtime and size
look unchanged. With 1 s timestamps, two writes inside one second with the same
size look unchanged, and other servers go on reading the old content. nfs-sync
touches such files on the server that wrote them, once the second has passed.

Examples:
   nfs-sync touch results.csv            # after updating it from this server
   nfs-sync run -- python train.py       # run, then fix what it wrote in .
   nfs-sync watch                        # the daemon (systemd: nfs-sync.service)
   nfs-sync --config /etc/gpusuite/gpusuite.toml watch --dry-run /data/home

See docs/nfs.md.`,
		Writer:                    stdout,
		ErrWriter:                 stderr,
		HideHelpCommand:           true,
		DisableSliceFlagSeparator: true,
		ExitErrHandler:            func(*cli.Context, error) {},
		OnUsageError:              onUsageError(prog),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", EnvVars: []string{config.EnvPath}, Usage: "site configuration `FILE` (default " + config.DefaultPath + ")"},
			&cli.StringFlag{Name: "log-level", EnvVars: []string{"GPUSUITE_NFSSYNC_LOG_LEVEL"}, Usage: "debug, info, warn or error (nfssync.log_level)"},
		},
		Commands: []*cli.Command{
			{
				Name:      "touch",
				Usage:     "fix files now: wait out the timestamp granule of their last write, then touch them",
				ArgsUsage: "FILE...",
				UsageText: "nfs-sync touch [--dry-run] [--window D] FILE...",
				Description: `Waits until the server's clock has left the granule of each file's last write,
checks the file did not change meanwhile, sets its times to the server's time
(write permission is enough) and checks that its mtime moved. Symlinks and
non-regular files are left alone; nothing is opened for writing.

Examples:
   nfs-sync touch results.csv model.ckpt
   nfs-sync touch --dry-run *.log`,
				OnUsageError: onUsageError("nfs-sync touch"),
				Flags:        []cli.Flag{windowFlag, dryRun},
				Action:       env.touch,
			},
			{
				Name:      "run",
				Usage:     "run a command, then fix the files it wrote",
				ArgsUsage: "-- CMD [ARG...]",
				UsageText: "nfs-sync run [--dir DIR]... [--dry-run] -- CMD [ARG...]",
				Description: `Watches DIR (default: the current directory, recursively) while CMD runs and
fixes every file closed after writing there, as touch does. The exit status is
CMD's.

Examples:
   nfs-sync run -- python train.py --epochs 3
   nfs-sync run --dir /data/shared/results -- ./postprocess.sh`,
				OnUsageError: onUsageError("nfs-sync run"),
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "dir", Usage: "watch `DIR` (repeatable; default the current directory)"},
					windowFlag, dryRun, backend,
				},
				Action: env.run,
			},
			{
				Name:      "watch",
				Usage:     "the daemon: fix every file written on this server below DIR (default nfssync.dirs)",
				ArgsUsage: "[DIR...]",
				UsageText: "nfs-sync watch [options] [DIR...]",
				Description: `Sees files closed after writing by processes on this server (fanotify, one mark
per mount, as root; inotify otherwise), coalesces bursts per file and touches
each file once per burst, after the granule of its last write. Serves counts
on /metrics and speaks systemd's notify and watchdog protocol.

Examples:
   nfs-sync watch                                  # nfssync.dirs, default /data
   nfs-sync --log-level debug watch --dry-run /data/home/alice
   nfs-sync watch --backend inotify --metrics-listen 127.0.0.1:9465`,
				OnUsageError: onUsageError("nfs-sync watch"),
				Flags: []cli.Flag{
					backend, windowFlag, dryRun,
					&cli.DurationFlag{Name: "settle", EnvVars: []string{"GPUSUITE_NFSSYNC_SETTLE"}, Usage: "quiet time that ends a burst of closes (nfssync.settle)"},
					&cli.StringSliceFlag{Name: "exclude", EnvVars: []string{"GPUSUITE_NFSSYNC_EXCLUDE"}, Usage: "`GLOB` of files never touched, added to nfssync.exclude (repeatable)"},
					&cli.IntFlag{Name: "max-fixes-per-second", EnvVars: []string{"GPUSUITE_NFSSYNC_MAX_FIXES_PER_SECOND"}, Usage: "cap on touches per second, 0 for none (nfssync.max_fixes_per_second)"},
					&cli.IntFlag{Name: "max-watches", EnvVars: []string{"GPUSUITE_NFSSYNC_MAX_WATCHES"}, Usage: "cap on inotify watches, 0 for the kernel's limit (nfssync.max_watches)"},
					&cli.StringFlag{Name: "metrics-listen", EnvVars: []string{"GPUSUITE_NFSSYNC_METRICS_LISTEN"}, Usage: "`ADDR` of /metrics, empty for none (nfssync.metrics_listen)"},
					&cli.StringFlag{Name: "web-config-file", EnvVars: []string{"GPUSUITE_NFSSYNC_WEB_CONFIG_FILE"}, Usage: "Prometheus web config `FILE` (TLS, basic auth) for /metrics (nfssync.web_config_file)"},
					&cli.StringFlag{Name: "probe-file", EnvVars: []string{"GPUSUITE_NFSSYNC_PROBE_FILE"}, Usage: "existing `FILE` on the share whose timestamps calibrate the window (nfssync.probe_file)"},
				},
				Action: env.watch,
			},
			{
				Name:      "calibrate",
				Usage:     "measure the server's timestamp granularity and clock offset with a probe file",
				ArgsUsage: "[PROBE]",
				UsageText: "nfs-sync calibrate [PROBE]",
				Description: `Touches PROBE (default nfssync.probe_file; it must exist and be writable) a few
times and reads back the server's timestamps: prints the granularity, the
offset of the server's clock and the window to configure.

Examples:
   touch /data/.nfs-sync-probe && nfs-sync calibrate /data/.nfs-sync-probe`,
				OnUsageError: onUsageError("nfs-sync calibrate"),
				Action:       env.calibrate,
			},
		},
	}
}

type cliEnv struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// setup loads the configuration, applies the flags that were set and
// builds the logger.
func (e *cliEnv) setup(c *cli.Context) (config.NFSSync, *slog.Logger, error) {
	cfg, err := cliwire.LoadConfig(c, e.getenv)
	if err != nil {
		return config.NFSSync{}, nil, fmt.Errorf("%w (fix the file or point --config/%s at another)", err, config.EnvPath)
	}
	n := cfg.NFSSync
	if c.IsSet("log-level") {
		n.LogLevel = c.String("log-level")
	}
	level, err := logging.ParseLevel(n.LogLevel)
	if err != nil {
		return n, nil, cliwire.Usagef("--log-level: %v", err)
	}
	if c.IsSet("window") {
		if w := c.Duration("window"); w <= 0 || w > time.Minute {
			return n, nil, cliwire.Usagef("--window %s is outside (0s, 1m]; the default 1.1s suits 1 s timestamps", w)
		}
		n.Window = config.Dur(c.Duration("window"))
	}
	if c.IsSet("backend") {
		switch b := c.String("backend"); b {
		case "auto", "fanotify", "inotify":
			n.Backend = b
		default:
			return n, nil, cliwire.Usagef("--backend %q is not auto, fanotify or inotify", b)
		}
	}
	return n, logging.New(prog, e.stderr, level, e.getenv), nil
}

func (e *cliEnv) fixer(c *cli.Context, n config.NFSSync, log *slog.Logger) *nfssync.Fixer {
	fx := nfssync.NewFixer(n.Window.Duration, time.Now, log)
	fx.AsOwner = n.AsOwner
	fx.DryRun = c.Bool("dry-run")
	return fx
}

// noEmptyArg refuses an empty path argument (an unset variable, as in
// "$OUT"), which would otherwise mean the current directory.
func noEmptyArg(c *cli.Context, what string) error {
	for i, a := range c.Args().Slice() {
		if a == "" {
			return cliwire.Usagef("%s %d is empty; give a path (an unset shell variable?)", what, i+1)
		}
	}
	return nil
}

func (e *cliEnv) touch(c *cli.Context) error {
	if c.NArg() == 0 {
		return cliwire.Usagef("touch needs at least one FILE (see nfs-sync touch --help)")
	}
	if err := noEmptyArg(c, "FILE"); err != nil {
		return err
	}
	n, log, err := e.setup(c)
	if err != nil {
		return err
	}
	fx := e.fixer(c, n, log)
	failed := 0
	for _, p := range c.Args().Slice() {
		r, err := nfssync.FixFile(c.Context, fx, p)
		if err != nil {
			return err
		}
		if !e.report(p, r) {
			failed++
		}
	}
	if failed > 0 {
		return &cliwire.ExitError{Code: exitcode.Failure}
	}
	return nil
}

// report prints one line about a file; false when it was not fixed and
// the user should know.
func (e *cliEnv) report(p string, r nfssync.Result) bool {
	switch r.Outcome {
	case nfssync.Fixed:
		fmt.Fprintf(e.stdout, "touched %s (mtime %s -> %s)\n", p, r.Before.Mtime.Format(time.RFC3339Nano), r.After.Mtime.Format(time.RFC3339Nano))
		return true
	case nfssync.WouldFix:
		fmt.Fprintf(e.stdout, "would touch %s: %s\n", p, r.Why)
		return true
	case nfssync.SkipNotRegular, nfssync.SkipSymlink, nfssync.SkipFuture, nfssync.SkipOtherMount:
		fmt.Fprintf(e.stdout, "left alone %s: %s\n", p, r.Why)
		return true
	case nfssync.SkipGone, nfssync.SkipStale:
		fmt.Fprintf(e.stderr, "%s: %s: %s\n", prog, p, "no such file (deleted or moved away)")
		return false
	case nfssync.SkipPermission:
		fmt.Fprintf(e.stderr, "%s: %s: not allowed to set its times (%s); run as its owner or someone who may write it\n", prog, p, r.Why)
		return false
	default:
		fmt.Fprintf(e.stderr, "%s: %s: %s\n", prog, p, r.Why)
		return false
	}
}

func (e *cliEnv) run(c *cli.Context) error {
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return cliwire.Usagef("run needs a command: nfs-sync run -- CMD [ARG...]")
	}
	n, log, err := e.setup(c)
	if err != nil {
		return err
	}
	dirs := c.StringSlice("dir")
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for i, d := range dirs {
		if d == "" {
			return cliwire.Usagef("--dir is empty; give a directory (an unset shell variable?)")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return cliwire.Usagef("--dir %q: %v", d, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return cliwire.Usagef("--dir %q is not a directory", d)
		}
		dirs[i] = abs
	}
	mx, err := nfssync.NewMatcher(n.Exclude)
	if err != nil {
		return err
	}
	fx := e.fixer(c, n, log)
	d := nfssync.NewDaemon(nfssync.Options{Roots: dirs, Backend: n.Backend, Settle: n.Settle.Duration, Exclude: mx,
		MaxFixesPerSecond: n.MaxFixesPerSecond, Workers: n.Workers, MaxPending: n.MaxPending,
		MaxWatches: n.MaxWatches, RescanLookback: n.RescanLookback.Duration},
		fx, nfssync.NewMetrics(prometheus.NewRegistry()), log, time.Now)
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	ready, errc := make(chan struct{}), make(chan error, 1)
	go func() { errc <- d.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-errc:
		return err
	}
	cmd := exec.CommandContext(c.Context, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	runErr := cmd.Run()
	// Let the last closes arrive, then wait for their fixes.
	time.Sleep(50 * time.Millisecond)
	d.WaitIdle(c.Context)
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	var ee *exec.ExitError
	switch {
	case errors.As(runErr, &ee):
		return &cliwire.ExitError{Code: ee.ExitCode()}
	case runErr != nil:
		return fmt.Errorf("run %q: %w", argv[0], runErr)
	}
	return nil
}

func (e *cliEnv) calibrate(c *cli.Context) error {
	if c.NArg() > 1 {
		return cliwire.Usagef("calibrate takes one PROBE file")
	}
	n, _, err := e.setup(c)
	if err != nil {
		return err
	}
	probe := n.ProbeFile
	if c.NArg() == 1 {
		probe = c.Args().First()
	}
	if probe == "" {
		return cliwire.Usagef("calibrate needs a PROBE file (or nfssync.probe_file in the config)")
	}
	cal, err := nfssync.Calibrate(c.Context, nfssync.OS(), probe, time.Now, 5)
	if err != nil {
		return err
	}
	g := cal.Granularity.String()
	if cal.Granularity < time.Second {
		g = "finer than 1s (a kernel clock tick)"
	}
	fmt.Fprintf(e.stdout, "granularity: %s\nserver clock - this clock: %s .. %s\nwindow: %s (nfssync.window = %q)\n",
		g, cal.OffsetLow.Round(time.Millisecond), cal.OffsetHigh.Round(time.Millisecond),
		cal.Window.Round(time.Millisecond), cal.Window.Round(10*time.Millisecond).String())
	return nil
}

func (e *cliEnv) watch(c *cli.Context) error {
	n, log, err := e.setup(c)
	if err != nil {
		return err
	}
	if err := noEmptyArg(c, "DIR"); err != nil {
		return err
	}
	if c.NArg() > 0 {
		n.Dirs = c.Args().Slice()
	}
	for i, d := range n.Dirs {
		if !filepath.IsAbs(d) {
			abs, err := filepath.Abs(d)
			if err != nil {
				return cliwire.Usagef("%q: %v", d, err)
			}
			n.Dirs[i] = abs
		}
		if fi, err := os.Stat(n.Dirs[i]); err != nil || !fi.IsDir() {
			return cliwire.Usagef("watched directory %q does not exist or is not a directory (set nfssync.dirs or pass DIR)", d)
		}
	}
	if c.IsSet("settle") {
		n.Settle = config.Dur(c.Duration("settle"))
	}
	if c.IsSet("exclude") {
		n.Exclude = append(n.Exclude, c.StringSlice("exclude")...)
	}
	if c.IsSet("max-fixes-per-second") {
		n.MaxFixesPerSecond = c.Int("max-fixes-per-second")
	}
	if c.IsSet("max-watches") {
		n.MaxWatches = c.Int("max-watches")
	}
	if c.IsSet("metrics-listen") {
		n.MetricsListen = c.String("metrics-listen")
	}
	if c.IsSet("probe-file") {
		n.ProbeFile = c.String("probe-file")
	}
	if c.IsSet("web-config-file") {
		n.WebConfigFile = c.String("web-config-file")
	}
	if err := webconfig.Check(n.WebConfigFile, "nfssync.web_config_file, --web-config-file"); err != nil {
		return err
	}
	mx, err := nfssync.NewMatcher(n.Exclude)
	if err != nil {
		return cliwire.Usagef("%v", err)
	}
	if n.MaxFixesPerSecond < 0 || n.MaxWatches < 0 || n.Settle.Duration < 0 {
		return cliwire.Usagef("--settle, --max-fixes-per-second and --max-watches must not be negative")
	}

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("gpusuite"))
	m := nfssync.NewMetrics(reg)
	fx := e.fixer(c, n, log)
	if n.ProbeFile != "" {
		cal, err := nfssync.Calibrate(ctx, nfssync.OS(), n.ProbeFile, time.Now, 5)
		if err != nil {
			return err
		}
		fx.SetWindow(cal.Window)
		log.Info("calibrated", "granularity", cal.Granularity, "offset_low", cal.OffsetLow, "window", cal.Window)
		if every := n.CalibrateEvery.Duration; every > 0 {
			go nfssync.Recalibrate(ctx, fx, m, log, n.ProbeFile, every)
		}
	}
	if n.MetricsListen != "" {
		ln, err := net.Listen("tcp", n.MetricsListen)
		if err != nil {
			return fmt.Errorf("metrics listen %q: %w (set nfssync.metrics_listen or --metrics-listen; empty turns it off)", n.MetricsListen, err)
		}
		srv := webconfig.MetricsServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		webconfig.Start(ln, srv, n.WebConfigFile, log, "metrics")
		defer srv.Close()
	}
	d := nfssync.NewDaemon(nfssync.Options{Roots: n.Dirs, Backend: n.Backend, Settle: n.Settle.Duration, Exclude: mx,
		MaxFixesPerSecond: n.MaxFixesPerSecond, Workers: n.Workers, MaxPending: n.MaxPending,
		MaxWatches: n.MaxWatches, RescanLookback: n.RescanLookback.Duration}, fx, m, log, time.Now)
	notify := e.getenv("NOTIFY_SOCKET") != ""
	ready := func() {
		log.Info("watching", "dirs", n.Dirs, "backend", d.Backend(), "window", fx.Window(), "dry_run", fx.DryRun)
		if notify {
			daemon.SdNotify(false, daemon.SdNotifyReady+"\nSTATUS=watching "+strings.Join(n.Dirs, " ")+" with "+d.Backend())
			go nfssync.Watchdog(ctx, d, log)
		}
	}
	err = d.Run(ctx, ready)
	if notify {
		daemon.SdNotify(false, daemon.SdNotifyStopping)
	}
	return err
}
