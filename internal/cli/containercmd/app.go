// Package containercmd is the command line of sbuild and srun-wrap, which
// share their setup (configuration, enroot paths, mounts, usage errors).
// What they do is internal/container. It sits under internal/cli, where
// alone an internal package may import urfave/cli, because two binaries
// share it.
//
// Files: app.go (the shared setup and OSSys), sbuild.go (sbuild and its
// subcommands), rebuild.go (--rebuild: the new container beside the old),
// srunwrap.go (srun-wrap).
package containercmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/container"
	"github.com/aicloud/gpusuite/internal/i18n"
)

// OSSys is the system both commands run on, logging warnings and worse
// to stderr.
func OSSys(stdin *os.File, stdout, stderr io.Writer, getenv func(string) string) container.Sys {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return container.OSSys(stdin, stdout, stderr, getenv, logger)
}

// newApp sets up the parts of a urfave/cli app both commands share: output
// through sys, no os.Exit, usage errors as one line.
func newApp(name string, sys container.Sys) *cli.App {
	app := &cli.App{
		Name:                   name,
		Writer:                 sys.Stdout,
		ErrWriter:              sys.Stderr,
		HideHelpCommand:        true,
		UseShortOptionHandling: false,
		ExitErrHandler:         func(*cli.Context, error) {},
		// A mount path may hold ',' and must then be refused with the
		// reason, not split into two meaningless halves.
		DisableSliceFlagSeparator: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			if opt, ok := cliwire.UnknownOption(err); ok {
				return cliwire.Usagef("unknown option %s (see %s --help)", opt, name)
			}
			return cliwire.Usagef("%v (see %s --help)", err, name)
		},
	}
	cliwire.Version(app)
	return app
}

// partitionFlag is --partition, which both commands read alike.
func partitionFlag() cli.Flag {
	return &cli.StringFlag{Name: "partition", EnvVars: []string{"GPUSUITE_PARTITION"}, Usage: "Slurm `PARTITION` (container.partition)"}
}

// nameFlag, timeFlag and mountFlag are read by code both commands share
// (env's name, env.mounts, container.JobTime); only their help differs.
func nameFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "name", EnvVars: []string{"GPUSUITE_CONTAINER_NAME"}, Usage: usage}
}

func timeFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "time", EnvVars: []string{"GPUSUITE_TIME"}, Usage: usage}
}

func mountFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: "mount", Usage: usage}
}

func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", EnvVars: []string{config.EnvPath}, Usage: "site configuration `FILE` (default " + config.DefaultPath + ")"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"GPUSUITE_LOG_LEVEL"}, Value: "warn", Usage: "debug, info, warn or error (diagnostics on stderr)"},
	}
}

// env is what every action needs: the configuration and the resolved
// enroot paths.
type env struct {
	sys   container.Sys
	cfg   config.Config
	user  container.User
	paths container.Paths
	cwd   string
	creds *credsFile // read once by credentials
	// tr speaks the researcher's language (LC_ALL, LC_MESSAGES, LANG).
	tr *i18n.Printer
}

func loadEnv(c *cli.Context, sys container.Sys) (*env, error) {
	cfg, err := cliwire.LoadConfig(c, sys.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%w (fix the file or point --config/%s at another)", err, config.EnvPath)
	}
	u, err := sys.User()
	if err != nil {
		return nil, err
	}
	var conf map[string]string
	if data, err := os.ReadFile(cfg.Container.EnrootConf); err == nil {
		conf, err = container.ParseEnrootConf(data)
		if err != nil {
			return nil, fmt.Errorf("enroot configuration %q: %w", cfg.Container.EnrootConf, err)
		}
	} else if !isNotExist(err) {
		sys.Logger.Debug("enroot.conf unreadable", "path", cfg.Container.EnrootConf, "err", err)
	}
	cwd, err := sys.Getwd()
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	cwd, err = filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	return &env{sys: sys, tr: i18n.ForEnv(sys.Getenv), cfg: cfg, user: u, paths: container.ResolvePaths(conf, cfg.Container.DataPath, u, sys.Getenv), cwd: cwd}, nil
}

// containerName is --name (or its variable) checked, else the directory's.
func (e *env) containerName(c *cli.Context) (string, error) {
	if c.IsSet("name") {
		n, err := container.CheckName(c.String("name"))
		if err != nil {
			return "", cliwire.Usagef("%v", err)
		}
		return n, nil
	}
	return container.NameFromDir(e.cwd), nil
}

// mounts are the site's mounts, then the user's: --mount, or when none
// is given, GPUSUITE_MOUNTS (mounts separated by ';').
func (e *env) mounts(user []string) ([]container.Mount, error) {
	if len(user) == 0 {
		for _, m := range strings.Split(e.sys.Getenv("GPUSUITE_MOUNTS"), ";") {
			if m = strings.TrimSpace(m); m != "" {
				user = append(user, m)
			}
		}
	}
	var out []container.Mount
	for _, s := range append(append([]string(nil), e.cfg.Container.Mounts...), user...) {
		m, err := container.ParseMount(s, e.cwd)
		if err != nil {
			return nil, cliwire.Usagef("%v", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// busy asks squeue which of the user's jobs use which container.
func (e *env) busy(ctx context.Context) (map[string][]string, error) {
	var out, errb strings.Builder
	code, err := e.sys.Run(ctx, container.Cmd{Argv: container.SqueueArgv(e.user.Name), Stdout: &out, Stderr: &errb})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("squeue failed (exit %d): %s", code, firstLine(errb.String()))
	}
	return container.ParseSqueue(out.String()), nil
}

// remove deletes a container with enroot: here when enroot is installed
// here, else on a GPU server through srun.
func (e *env) remove(ctx context.Context, name string) error {
	argv := []string{"enroot", "remove", "--force", container.EnrootName(name)}
	if _, err := e.sys.LookPath("enroot"); err != nil {
		srun := []string{"srun", "--ntasks=1", "--job-name=sbuild-rm"}
		if e.cfg.Container.Partition != "" {
			srun = append(srun, "--partition="+e.cfg.Container.Partition)
		}
		argv = append(srun, argv...)
	}
	var errb strings.Builder
	code, err := e.sys.Run(ctx, container.Cmd{Argv: argv, Stdout: e.sys.Stderr, Stderr: &errb})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s failed (exit %d): %s", strings.Join(argv, " "), code, firstLine(errb.String()))
	}
	if err := os.Remove(container.MetaPath(e.paths.Data, name)); err != nil && !isNotExist(err) {
		return fmt.Errorf("remove metadata: %w", err)
	}
	return nil
}

// valuedFlags lists the flags of fs that take a value.
func valuedFlags(fs []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range fs {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			m[n] = !isBool
		}
	}
	return m
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// firstLine is s's first non-blank line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
