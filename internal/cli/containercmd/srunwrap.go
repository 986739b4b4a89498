package containercmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/container"
	"github.com/aicloud/gpusuite/internal/logging"
)

const srunWrapHelp = `Runs CMD (default: an interactive bash) with srun in the enroot container
that sbuild made for the current directory. The directory is mounted at
/workspace (container.workdir) and the command starts there. srun-wrap
replaces itself with srun, so the terminal, signals (Ctrl-C) and the exit
code are srun's own. Options srun-wrap does not know are handed to srun
unchanged; everything after CMD belongs to CMD.

Examples:
   srun-wrap                                 # interactive shell, 1 GPU
   srun-wrap python train.py --epochs 10     # run a command
   srun-wrap --gpus 4 -p long -t 2-00:00:00 python train.py
   srun-wrap --mount /data/datasets:/datasets:ro --env WANDB_API_KEY python train.py
   srun-wrap --name myproj -- bash -c 'nvidia-smi; python -V'
   srun-wrap --batch -t 1:00:00 train.sh --lr 0.1   # submit with sbatch, keeps #SBATCH lines
   srun-wrap --dry-run python train.py       # print the srun command line only`

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func srunWrapFlags() []cli.Flag {
	return append(configFlags(),
		nameFlag("container `NAME` (default: from the directory's name, as sbuild made it)"),
		&cli.IntFlag{Name: "gpus", EnvVars: []string{"GPUSUITE_GPUS"}, Usage: "GPUs to ask for, 0 for none (container.gpus)"},
		partitionFlag(),
		timeFlag("time limit, as srun --time (container.time)"),
		mountFlag("extra bind mount `SRC:DST[:ro]`, repeatable; no ',' or ':' in paths (env GPUSUITE_MOUNTS, ';'-separated)"),
		&cli.StringSliceFlag{Name: "env", Usage: "pass `NAME[=VALUE]` into the container, over the image's own value; repeatable"},
		&cli.BoolFlag{Name: "batch", Usage: "submit CMD, a job script, with sbatch instead; it runs in the container and its #SBATCH lines are kept"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the command line instead of running it"},
	)
}

// SrunWrap is the srun-wrap command. It returns the exit code; on success
// it never returns, because srun has replaced the process.
func SrunWrap(args []string, sys container.Sys) int {
	prog := "srun-wrap"
	var split container.Split // the app's action reads it once it is run
	app := srunWrapApp(sys, &split)
	// --version is srun-wrap's own (srun's is -V).
	own := map[string]bool{"help": false, "h": false, "version": false}
	for n, v := range valuedFlags(app.Flags) {
		own[n] = v
	}
	var err error
	if split, err = container.SplitArgs(args[1:], own); err != nil {
		return cliwire.Finish(prog, sys.Stderr, cliwire.Usagef("%v", err))
	}
	return cliwire.Finish(prog, sys.Stderr, app.Run(append([]string{prog}, split.Own...)))
}

// srunWrapApp is srun-wrap's command line; SrunWrap splits the arguments
// first, and the tests render its help, man page and completions.
func srunWrapApp(sys container.Sys, split *container.Split) *cli.App {
	app := newApp("srun-wrap", sys)
	app.Usage = "run a command in the project's enroot container through srun"
	app.UsageText = "srun-wrap [options] [srun options] [--] [CMD [ARGS...]]"
	app.Description = srunWrapHelp
	app.Flags = srunWrapFlags()
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return cliwire.Usagef("unexpected %q before the command", c.Args().First())
		}
		return srunWrap(c, sys, *split)
	}
	cliwire.ConfigDefaults(app)
	return app
}

func srunWrap(c *cli.Context, sys container.Sys, split container.Split) error {
	level, err := logging.ParseLevel(c.String("log-level"))
	if err != nil {
		return cliwire.Usagef("%v", err)
	}
	sys.Logger = logging.New("srun-wrap", sys.Stderr, level, sys.Getenv)
	e, err := loadEnv(c, sys)
	if err != nil {
		return err
	}
	cc := e.cfg.Container
	if err := container.CheckProject("srun-wrap", e.cwd); err != nil {
		return err
	}
	name, err := e.containerName(c)
	if err != nil {
		return err
	}
	mounts, err := e.mounts(c.StringSlice("mount"))
	if err != nil {
		return err
	}
	job := container.Job{Name: name, Project: e.cwd, Workdir: cc.Workdir, GPUs: cc.GPUs, Partition: cc.Partition, Time: cc.Time,
		SiteArgs: cc.SrunArgs, UserArgs: split.Srun, Mounts: mounts}
	if c.IsSet("gpus") {
		if c.Int("gpus") < 0 {
			return cliwire.Usagef("--gpus %d: give 0 or more", c.Int("gpus"))
		}
		job.GPUs = c.Int("gpus")
	}
	if c.IsSet("partition") {
		job.Partition = c.String("partition")
	}
	if job.Time, err = container.JobTime(c.IsSet("time"), c.String("time"), cc.Time); err != nil {
		return err
	}
	var extraEnv []string
	for _, kv := range c.StringSlice("env") {
		k, v, hasVal := strings.Cut(kv, "=")
		if !envName.MatchString(k) {
			return cliwire.Usagef("--env %q: %q is not a variable name (letters, digits, '_')", kv, k)
		}
		if hasVal {
			extraEnv = append(extraEnv, k+"="+v)
		} else if _, ok := lookupEnv(sys.Environ(), k); !ok {
			return cliwire.Usagef("--env %s: %s is not set here; give a value with --env %s=VALUE", k, k, k)
		}
		job.Env = append(job.Env, k)
	}
	srun, lookErr := sys.LookPath("srun")
	dry := c.Bool("dry-run")
	if f := container.CheckSrun(lookErr); f != nil && !dry {
		return f
	}
	if cc.CheckExists {
		ok, err := container.Exists(e.paths.Data, name)
		if err != nil {
			sys.Logger.Warn("cannot check the container", "err", err)
		} else if !ok {
			msg := e.tr.T("container %s does not exist in %s; build it first: %s", container.EnrootName(name), e.paths.Data, buildHint(c, name, e.cwd))
			if !dry {
				return fmt.Errorf("%s", msg)
			}
			fmt.Fprintln(sys.Stderr, e.tr.T("warning: %s", msg))
		}
	}
	if c.Bool("batch") {
		if len(split.Cmd) == 0 {
			return cliwire.Usagef("--batch needs the job script as the command, e.g. srun-wrap --batch train.sh")
		}
		return submitBatch(c.Context, e, job, split.Cmd[0], split.Cmd[1:], dry)
	}
	cmd := split.Cmd
	pty := false
	if len(cmd) == 0 {
		if !sys.StdinIsTerminal() {
			return cliwire.Usagef("no command given and standard input is not a terminal, so there is no one to talk to an interactive shell; give a command, e.g. srun-wrap python train.py")
		}
		cmd, pty = []string{"bash", "-i"}, true
	}
	argv := container.RunArgv(job, pty, cmd)
	if dry {
		fmt.Fprintln(sys.Stdout, assignments(extraEnv)+container.QuoteArgs(argv))
		return nil
	}
	env := append(sys.Environ(), extraEnv...)
	sys.Logger.Debug("exec", "srun", srun, "argv", argv)
	if err := sys.Exec(srun, argv, env); err != nil {
		return fmt.Errorf("exec %s: %w", srun, err)
	}
	return nil
}

// assignments writes NAME=VALUE prefixes for a dry-run line.
func assignments(kvs []string) string {
	var b strings.Builder
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(k + "=" + container.Quote(v) + " ")
	}
	return b.String()
}

func lookupEnv(environ []string, k string) (string, bool) {
	for _, kv := range environ {
		if n, v, ok := strings.Cut(kv, "="); ok && n == k {
			return v, true
		}
	}
	return "", false
}

func buildHint(c *cli.Context, name, cwd string) string {
	if c.IsSet("name") && name != container.NameFromDir(cwd) {
		return "sbuild --name " + name + " [IMAGE]"
	}
	return "sbuild [IMAGE] (in " + cwd + ")"
}

func submitBatch(ctx context.Context, e *env, job container.Job, script string, args []string, dry bool) error {
	abs := script
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(e.cwd, script)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if isNotExist(err) {
			return cliwire.Usagef("--batch %s: no such file; give the path of your job script", script)
		}
		return fmt.Errorf("read %q: %w", abs, err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	cmd, extra, err := container.ScriptCommand(abs, e.cwd, first)
	if err != nil {
		return cliwire.Usagef("%v", err)
	}
	job.Mounts = append(job.Mounts, extra...)
	body := container.BatchScript(job, abs, container.Directives(string(data)), append(cmd, args...))
	argv := container.BatchArgv(job)
	if dry {
		fmt.Fprint(e.sys.Stdout, container.FeedCommand(argv, body))
		return nil
	}
	if _, err := e.sys.LookPath("sbatch"); err != nil {
		return fmt.Errorf("sbatch is not on PATH; run this on a head server where Slurm's client is installed")
	}
	code, err := e.sys.Run(ctx, container.Cmd{Argv: argv, Stdin: strings.NewReader(body), Stdout: e.sys.Stdout, Stderr: e.sys.Stderr})
	if err != nil {
		return err
	}
	if code != 0 {
		return &cliwire.ExitError{Code: code, Err: fmt.Errorf("sbatch failed (exit %d); see its message above", code)}
	}
	return nil
}
