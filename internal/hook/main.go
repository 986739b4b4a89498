package hook

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/logging"
	"github.com/aicloud/gpusuite/internal/record"
)

// Options are what the hook's command line gives it.
type Options struct {
	// Config is --config ("" for GPUSUITE_CONFIG or the default path).
	Config string
	// SpoolDir overrides spool.dir when SpoolDirSet (--spool-dir or
	// GPUSUITE_SPOOL_DIR); it must be absolute.
	SpoolDir    string
	SpoolDirSet bool
	// Helper is the hook-gpus to run when no agent answers; "" means the
	// one beside the hook's executable.
	Helper string
}

// Name is the program name of the hook that records kind.
func Name(kind record.Kind) string { return string(sourceOf(kind)) }

// Exec is the whole prolog or epilog once its command line is parsed:
// config, logging, the hard time bound, and the exit-0 rule. It returns
// the exit status: 0 on every accounting error, 1 only when the opt-in
// health check fails.
func Exec(kind record.Kind, o Options, stderr io.Writer, getenv func(string) string) int {
	name := Name(kind)
	// the bound covers reading the config too: a hung mount must not hold
	// the job longer than hooks.timeout
	start := time.Now()
	path, explicit := config.Path(o.Config, getenv)
	cfg, salvaged, cfgErr := config.LoadHook(path, explicit, config.HookReadBound)
	level, lerr := logging.ParseLevel(cfg.Hooks.LogLevel)
	if lerr != nil {
		level = slog.LevelInfo
	}
	log := logging.New(name, stderr, level, getenv)
	jobAttr := slog.String("job", getenv("SLURM_JOB_ID"))
	if o.SpoolDirSet {
		if dir := o.SpoolDir; filepath.IsAbs(dir) {
			cfg.Spool.Dir = dir
		} else {
			log.Error("--spool-dir/GPUSUITE_SPOOL_DIR is not an absolute path; using spool.dir", jobAttr, "spool_dir", dir, "using", cfg.Spool.Dir)
		}
	}
	if cfgErr != nil {
		// The agent refuses this file, so say where the event goes: an
		// admin must find it there or fix the file.
		log.Error("config unusable; recording with the hook keys that still parse and defaults for the rest", jobAttr, "err", cfgErr,
			"spool", cfg.Spool.Dir, "cluster", cfg.Cluster.Name, "gpu_backend", cfg.GPU.Backend, "taken_from_file", strings.Join(salvaged, ","))
	}

	deadline := start.Add(cfg.Hooks.Timeout.Duration)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(ctx, kind, cfg, Deps{Getenv: getenv, Now: cfg.GPU.Clock(), Hostname: os.Hostname, ProcRoot: filepath.Join(cmp.Or(cfg.Hooks.Root, "/"), "proc"), DevRoot: filepath.Join(cmp.Or(cfg.Hooks.Root, "/"), "dev"), Helper: o.Helper}, log)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			log.Error("accounting failed; job unaffected", jobAttr, "err", o.err)
			return exitcode.OK
		}
		if o.res.Unhealthy != "" {
			log.Error("health check failed: node should be drained", jobAttr, "reason", o.res.Unhealthy)
			return exitcode.Failure
		}
		log.Debug("done", jobAttr, "elapsed", time.Since(start))
		return exitcode.OK
	case <-time.After(time.Until(deadline) + 100*time.Millisecond):
		log.Error("hook timed out; nothing recorded, job unaffected", jobAttr, "timeout", cfg.Hooks.Timeout.Duration)
		return exitcode.OK
	}
}
