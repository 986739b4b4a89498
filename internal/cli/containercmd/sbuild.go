package containercmd

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/container"
	"github.com/aicloud/gpusuite/internal/logging"
)

const sbuildHelp = `Creates the enroot container of the current directory's project, once,
through srun and pyxis (--container-name=NAME:create, so an existing
container is never silently reused with the old image). The container is
named after the directory (printed as pyxis_NAME); run commands in it with
srun-wrap. Options after "--" go to srun unchanged. Before it submits,
sbuild asks the image's registry, with your enroot credentials, whether the
tag exists and the credentials are accepted, so a typo or an expired key
fails at once instead of after the queue. --rebuild builds the new
container beside the old one and swaps them only once it exists.

Examples:
   sbuild                                   # site default image (container.image)
   sbuild nvcr.io/nvidia/pytorch:24.05-py3  # a given image
   sbuild --setup setup.sh                  # then run setup.sh inside, as root, writable
   sbuild --rebuild --setup setup.sh        # replace it; the old one stays if this fails
   sbuild --save $HOME/myproj.sqsh          # also keep the result as a squashfs file
   sbuild --dry-run                         # print the srun command line only
   sbuild -- --nodelist=gpu03               # extra srun options
   sbuild list                              # your containers, size, image, date
   sbuild rm myproj                         # remove one (asks first; --yes to skip)
   sbuild login                             # store your NGC API key for enroot
   sbuild check                             # run every preflight check and say what to fix`

func sbuildFlags() []cli.Flag {
	return append(configFlags(),
		nameFlag("container `NAME` (default: the directory's name, sanitised)"),
		&cli.StringFlag{Name: "image", EnvVars: []string{"GPUSUITE_CONTAINER_IMAGE"}, Usage: "image when none is given as argument (container.image)"},
		&cli.BoolFlag{Name: "rebuild", Usage: "replace an existing container of this name, keeping the old one until the new one is built (refused while one of your jobs uses it)"},
		&cli.StringFlag{Name: "setup", Usage: "run `FILE` inside the new container as remapped root, writable, in /workspace"},
		&cli.IntFlag{Name: "gpus", EnvVars: []string{"GPUSUITE_BUILD_GPUS"}, Usage: "GPUs for the build job (container.build_gpus)"},
		partitionFlag(),
		timeFlag("time limit for the build job, as srun --time"),
		mountFlag("extra bind mount `SRC:DST[:ro]` while building, repeatable (env GPUSUITE_MOUNTS, ';'-separated)"),
		&cli.StringFlag{Name: "save", Usage: "also save the container as squashfs `PATH.sqsh` (pyxis --container-save)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the srun command line instead of running it"},
		&cli.BoolFlag{Name: "skip-checks", Usage: "do not run the preflight checks (nor ask the image's registry)"},
		&cli.DurationFlag{Name: "registry-timeout", Value: 5 * time.Second, Usage: "how long to wait for the image's registry before building without its answer"},
	)
}

// Sbuild is the sbuild command; it returns the exit code.
func Sbuild(args []string, sys container.Sys) int {
	prog := "sbuild"
	var extra []string
	rest := args[1:]
	for i, a := range rest {
		if a == "--" {
			extra = append(extra, rest[i+1:]...)
			rest = rest[:i]
			break
		}
	}
	app := sbuildApp(sys, &extra)
	// The command named, as typed: the first word after sbuild's options.
	named := ""
	valued := valuedFlags(app.Flags)
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") {
			if app.Command(a) != nil {
				named = a
			}
			break
		}
		if n := strings.TrimLeft(a, "-"); !strings.Contains(n, "=") && valued[n] {
			i++
		}
	}
	if len(extra) > 0 && named != "" {
		return cliwire.Finish(prog, sys.Stderr, cliwire.Usagef("options after -- are for the build's srun, not for sbuild %s", named))
	}
	// Put each option where its command reads it, as gpuacct does.
	return cliwire.Finish(prog, sys.Stderr, app.Run(cliwire.Reorder(app, append([]string{prog}, rest...))))
}

// sbuildApp is sbuild's command tree; Sbuild reorders the arguments it runs
// on, and the tests render its help, man page and completions.
func sbuildApp(sys container.Sys, extra *[]string) *cli.App {
	rmFlags := []cli.Flag{&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask"}}
	pruneFlags := append(rmFlags, &cli.DurationFlag{Name: "older-than", Usage: "also remove containers created longer ago than `DURATION` (e.g. 2160h)"})
	listFlags := []cli.Flag{&cli.BoolFlag{Name: "no-size", Usage: "skip adding up sizes (faster on NFS)"}}
	loginFlags := []cli.Flag{&cli.StringFlag{Name: "key-file", Usage: "read the NGC API key from `FILE` instead of the terminal"}}
	const prog = "sbuild"
	app := newApp(prog, sys)
	app.Usage = "build the project's enroot container once; list, remove, prune"
	app.UsageText = "sbuild [options] [IMAGE] [-- SRUN-OPTIONS...]\n   sbuild list | rm NAME... | prune | login | check [IMAGE]"
	app.Description = sbuildHelp
	app.Flags = sbuildFlags()
	app.Before = func(c *cli.Context) error {
		level, err := logging.ParseLevel(c.String("log-level"))
		if err != nil {
			return cliwire.Usagef("%v", err)
		}
		sys.Logger = logging.New(prog, sys.Stderr, level, sys.Getenv)
		return nil
	}
	app.Action = func(c *cli.Context) error { return build(c, sys, *extra) }
	app.Commands = []*cli.Command{
		{Name: "list", Aliases: []string{"ls"}, Usage: "list your containers with size, image and creation date", Flags: listFlags,
			Description: "Example:\n   sbuild list\n   sbuild list --no-size", Action: func(c *cli.Context) error { return list(c, sys) }},
		{Name: "rm", Usage: "remove containers (asks first)", ArgsUsage: "NAME...", Flags: rmFlags,
			Description: "Example:\n   sbuild rm myproj\n   sbuild rm --yes pyxis_old1 old2", Action: func(c *cli.Context) error { return remove(c, sys) }},
		{Name: "prune", Usage: "remove containers whose project directory is gone (and, with --older-than, old ones)", Flags: pruneFlags,
			Description: "Example:\n   sbuild prune\n   sbuild prune --older-than 2160h --yes", Action: func(c *cli.Context) error { return prune(c, sys) }},
		{Name: "login", Usage: "store your NGC API key in enroot's credentials file (mode 600)", Flags: loginFlags,
			Description: "Replaces the site's nvcrlogin. Writes both machine lines nvcr.io needs.\n\nExample:\n   sbuild login\n   sbuild login --key-file ~/ngc-key.txt",
			Action:      func(c *cli.Context) error { return login(c, sys) }},
		{Name: "check", Usage: "run every preflight check and say what to fix", ArgsUsage: "[IMAGE]",
			Description: "Example:\n   sbuild check\n   sbuild check nvcr.io/nvidia/pytorch:24.05-py3", Action: func(c *cli.Context) error { return check(c, sys) }},
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError
	}
	cliwire.ConfigDefaults(app)
	return app
}

// plan is everything a build needs, worked out before anything runs.
type plan struct {
	build    container.Build
	img      container.Image
	original string
	note     string
	setup    string
	setupSHA string
}

// makePlan loads the environment and works out the build of the image the
// line names (its argument, else --image, else container.image).
func makePlan(c *cli.Context, sys container.Sys, extra []string) (*env, *plan, error) {
	e, err := loadEnv(c, sys)
	if err != nil {
		return nil, nil, err
	}
	imageArg := c.Args().First()
	cc := e.cfg.Container
	if err := container.CheckProject("sbuild", e.cwd); err != nil {
		return nil, nil, err
	}
	name, err := e.containerName(c)
	if err != nil {
		return nil, nil, err
	}
	ref := cc.Image
	if c.IsSet("image") {
		ref = c.String("image")
	}
	if imageArg != "" {
		ref = imageArg
	}
	img, err := container.ParseImage(ref)
	if err != nil {
		return nil, nil, cliwire.Usagef("%v", err)
	}
	if img.Path != "" && !filepath.IsAbs(img.Path) {
		img.Path = filepath.Join(e.cwd, img.Path)
		ref = img.Path
	}
	var v container.Version
	if cc.EnrootVersion != "" {
		if v, err = container.ParseVersion(cc.EnrootVersion); err != nil {
			return nil, nil, fmt.Errorf("key \"container.enroot_version\": %v", err)
		}
	} else if _, err := e.sys.LookPath("enroot"); err == nil {
		var out strings.Builder
		if code, err := e.sys.Run(c.Context, container.Cmd{Argv: []string{"enroot", "version"}, Stdout: &out, Stderr: io.Discard}); err == nil && code == 0 {
			v, _ = container.ParseVersion(out.String())
		}
	}
	p := &plan{img: img, original: ref}
	p.build.Ref, p.note = img.ForEnroot(ref, v)
	mounts, err := e.mounts(c.StringSlice("mount"))
	if err != nil {
		return nil, nil, err
	}
	p.build.Job = container.Job{Name: name, Project: e.cwd, Workdir: cc.Workdir, GPUs: cc.BuildGPUs, Partition: cc.Partition,
		Time: cc.Time, SiteArgs: cc.SrunArgs, UserArgs: extra, Mounts: mounts}
	if c.IsSet("gpus") {
		if c.Int("gpus") < 0 {
			return nil, nil, cliwire.Usagef("--gpus %d: give 0 or more", c.Int("gpus"))
		}
		p.build.GPUs = c.Int("gpus")
	}
	if c.IsSet("partition") {
		p.build.Partition = c.String("partition")
	}
	if p.build.Time, err = container.JobTime(c.IsSet("time"), c.String("time"), cc.Time); err != nil {
		return nil, nil, err
	}
	if s := c.String("setup"); s != "" {
		abs := s
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(e.cwd, s)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			if isNotExist(err) {
				return nil, nil, cliwire.Usagef("--setup %s: no such file; give the path of your setup script, e.g. --setup ./setup.sh", s)
			}
			return nil, nil, fmt.Errorf("read setup script %q: %w", abs, err)
		}
		sum := sha256.Sum256(data)
		p.setup, p.setupSHA = abs, hex.EncodeToString(sum[:])
		first, _, _ := strings.Cut(string(data), "\n")
		cmd, m, err := container.ScriptCommand(abs, e.cwd, first)
		if err != nil {
			return nil, nil, cliwire.Usagef("%v", err)
		}
		p.build.SetupCmd = cmd
		p.build.Mounts = append(p.build.Mounts, m...)
	}
	if s := c.String("save"); s != "" {
		if strings.HasSuffix(s, "/") {
			return nil, nil, cliwire.Usagef("--save %s: give a file name such as %sNAME.sqsh, not a directory", s, s)
		}
		if !filepath.IsAbs(s) {
			s = filepath.Join(e.cwd, s)
		}
		if err := container.CheckPath("--save path", s); err != nil {
			return nil, nil, cliwire.Usagef("%v", err)
		}
		p.build.Save = s
	}
	return e, p, nil
}

// preflight runs the checks that need the outside world.
func preflight(ctx context.Context, e *env, img container.Image) []container.Finding {
	var out []container.Finding
	add := func(f *container.Finding) {
		if f != nil {
			out = append(out, *f)
		}
	}
	_, lookErr := e.sys.LookPath("srun")
	add(container.CheckSrun(lookErr))
	if lookErr == nil {
		var buf strings.Builder
		_, err := e.sys.Run(ctx, container.Cmd{Argv: []string{"srun", "--help"}, Stdout: &buf, Stderr: &buf})
		add(container.CheckPyxis(buf.String(), err))
	}
	add(container.CheckScope(e.cfg.Container.Scope))
	if img.Registry != "" {
		cf := e.credentials()
		add(container.CheckCredentials(img.Registry, cf.path, cf.data, cf.mode, cf.err))
	}
	minFree := uint64(e.cfg.Container.MinFreeGiB) << 30
	for _, d := range []struct{ what, key, path string }{
		{"data path", "ENROOT_DATA_PATH", e.paths.Data},
		{"cache path", "ENROOT_CACHE_PATH", e.paths.Cache},
	} {
		info, err := e.sys.Statfs(existingParent(d.path))
		add(container.CheckStorage(d.what, d.key, d.path, info, err, minFree))
	}
	return out
}

// existingParent is the nearest directory of p that exists, so a data
// path not made yet is judged by the file system it will be made on.
func existingParent(p string) string {
	for q := p; ; q = filepath.Dir(q) {
		if _, err := os.Stat(q); err == nil || q == filepath.Dir(q) {
			return q
		}
	}
}

func report(w io.Writer, fs []container.Finding) (failed bool) {
	for _, f := range fs {
		fmt.Fprintf(w, "%s: %s\n", f.Level, f.Line())
		if f.Level == container.Fail {
			failed = true
		}
	}
	return failed
}

func build(c *cli.Context, sys container.Sys, extra []string) error {
	if c.NArg() > 1 {
		return cliwire.Usagef("one IMAGE at most, got %q; put srun options after --", strings.Join(c.Args().Slice(), " "))
	}
	e, p, err := makePlan(c, sys, extra)
	if err != nil {
		return err
	}
	name := p.build.Name
	if p.note != "" {
		fmt.Fprintln(sys.Stderr, p.note)
	}
	if c.Bool("dry-run") {
		fmt.Fprintln(sys.Stdout, container.QuoteArgs(container.BuildArgv(p.build)))
		return nil
	}
	if p.build.Save == "" {
		if f := container.CheckScope(e.cfg.Container.Scope); f != nil {
			return f
		}
	}
	if !c.Bool("skip-checks") {
		var fs []container.Finding
		for _, f := range preflight(c.Context, e, p.img) {
			if f.Check == "scope" && p.build.Save != "" {
				continue
			}
			fs = append(fs, f)
		}
		if report(sys.Stderr, fs) {
			return &cliwire.ExitError{Code: exitcode.Failure, Err: fmt.Errorf("not building %s: fix the errors above (or pass --skip-checks)", container.EnrootName(name))}
		}
	}
	exists, err := container.Exists(e.paths.Data, name)
	if err != nil {
		return err
	}
	var busy map[string][]string
	if exists {
		if !c.Bool("rebuild") {
			what := ""
			if m, ok, _ := container.ReadMeta(e.paths.Data, name); ok {
				what = fmt.Sprintf(" (made %s from %s)", m.Created.Local().Format("2006-01-02 15:04"), m.Image)
			}
			return fmt.Errorf("container %s already exists%s and pyxis would reuse it, ignoring the new image; run in it with srun-wrap, or replace it with sbuild --rebuild", container.EnrootName(name), what)
		}
		if busy, err = e.notBusy(c.Context, name); err != nil {
			return err
		}
	}
	// The registry is asked last, once nothing local stands in the way,
	// and before anything is submitted or removed.
	if !c.Bool("skip-checks") {
		if f := e.askRegistry(c.Context, p.img, c.Duration("registry-timeout")); f != nil {
			if f.Level == container.Fail {
				if exists {
					f.Msg += "; " + container.EnrootName(name) + " is kept as it was"
				}
				return f
			}
			fmt.Fprintf(sys.Stderr, "%s: %s\n", f.Level, f.Line())
		}
	}
	if exists {
		return rebuild(c, e, p, busy)
	}
	fmt.Fprintln(sys.Stderr, e.tr.T("sbuild: creating %s from %s", container.EnrootName(name), p.build.Ref))
	code, tail, err := runBuild(c.Context, sys, p.build)
	if err != nil {
		return err
	}
	created, _ := container.Exists(e.paths.Data, name)
	meta := p.meta(e, sys.Now())
	if code != 0 {
		if created && p.setup != "" {
			meta.SetupExit = code
			if err := container.WriteMeta(e.paths.Data, meta); err != nil {
				sys.Logger.Warn("cannot record metadata", "err", err)
			}
			return &cliwire.ExitError{Code: code, Err: fmt.Errorf("setup script %s failed with exit code %d; %s is kept so you can look inside (srun-wrap --name %s); fix the script and run sbuild --rebuild --setup %s", p.setup, code, container.EnrootName(name), name, p.setup)}
		}
		return &cliwire.ExitError{Code: code, Err: fmt.Errorf("creating %s failed (srun exit %d): %s", container.EnrootName(name), code, diagnose(tail, e))}
	}
	if !created && e.cfg.Container.CheckExists {
		fmt.Fprintln(sys.Stderr, e.tr.T("warning: srun succeeded but %s is not in %s: the GPU servers keep containers elsewhere (set container.data_path) or pyxis uses container_scope=job", container.EnrootName(name), e.paths.Data))
	}
	if created {
		if err := container.WriteMeta(e.paths.Data, meta); err != nil {
			fmt.Fprintf(sys.Stderr, "warning: %v\n", err)
		}
	}
	return done(e, name)
}

func (p *plan) meta(e *env, now time.Time) container.Meta {
	return container.Meta{Name: p.build.Name, Image: p.original, Ref: p.build.Ref, Tag: p.img.ResolvedTag(), Digest: p.img.Digest,
		Created: now.UTC().Truncate(time.Second), Project: e.cwd, Setup: p.setup, SetupSHA256: p.setupSHA, Saved: p.build.Save}
}

func done(e *env, name string) error {
	fmt.Fprintf(e.sys.Stdout, "%s\n", container.EnrootName(name))
	fmt.Fprintln(e.sys.Stderr, e.tr.T("sbuild: done; run in it with: srun-wrap [CMD]   (or srun --container-name=%s ...)", name))
	return nil
}

// diagnose explains the usual reasons a pyxis import fails from what srun
// printed.
func diagnose(out string, e *env) string {
	low := strings.ToLower(out)
	switch {
	case strings.Contains(low, "401") || strings.Contains(low, "unauthorized"):
		return "the registry refused the login (401); check the credentials with `sbuild check` and store a fresh key with `sbuild login`"
	case strings.Contains(low, "no space left") || strings.Contains(low, "disk quota exceeded"):
		return fmt.Sprintf("a disk filled up (often /run or the home quota); free space with `sbuild prune` or point ENROOT_DATA_PATH/ENROOT_CACHE_PATH at a larger disk (now %s and %s)", e.paths.Data, e.paths.Cache)
	case strings.Contains(low, "already exists"):
		return "a container of this name appeared meanwhile; run sbuild --rebuild"
	case strings.Contains(low, "unrecognized option") && strings.Contains(low, "container"):
		return "this srun does not know pyxis's options: pyxis is not loaded here (run `sbuild check`)"
	case strings.Contains(low, "manifest unknown") || strings.Contains(low, "not found"):
		return "the image or tag does not exist; check the name and tag on the registry"
	case strings.Contains(low, "permission denied"):
		return "permission denied while unpacking; if ENROOT_DATA_PATH is on NFS, point it at node-local storage"
	}
	return "see srun's and pyxis's messages above"
}

type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

func list(c *cli.Context, sys container.Sys) error {
	e, err := loadEnv(c, sys)
	if err != nil {
		return err
	}
	es, err := container.List(e.paths.Data, !c.Bool("no-size"))
	if err != nil {
		return err
	}
	if len(es) == 0 {
		fmt.Fprintln(sys.Stdout, e.tr.T("no containers in %s; make one with: sbuild [IMAGE]", e.paths.Data))
		return nil
	}
	busy, err := e.busy(c.Context)
	if err != nil {
		sys.Logger.Info("cannot ask squeue which containers are in use", "err", err)
	}
	return container.WriteList(sys.Stdout, es, busy, e.tr)
}

// confirm asks a yes/no question on stderr.
func confirm(sys container.Sys, in *bufio.Reader, question string) (bool, error) {
	if !sys.StdinIsTerminal() {
		return false, cliwire.Usagef("%s: standard input is not a terminal, so nobody can answer; add --yes", question)
	}
	fmt.Fprintf(sys.Stderr, "%s [y/N] ", question)
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

func removeMany(c *cli.Context, e *env, names []string, why map[string]string) error {
	busy, err := e.busy(c.Context)
	if err != nil {
		return fmt.Errorf("cannot tell whether a job uses these containers, so not removing them: %w", err)
	}
	in := bufio.NewReader(e.sys.Stdin)
	failed := 0
	for _, n := range names {
		if jobs := busy[n]; len(jobs) > 0 {
			fmt.Fprintln(e.sys.Stderr, e.tr.T("sbuild: skipping %s: your job %s is using it (scancel it first)", container.EnrootName(n), strings.Join(jobs, ",")))
			failed++
			continue
		}
		if !c.Bool("yes") {
			ok, err := confirm(e.sys, in, e.tr.T("remove %s%s?", container.EnrootName(n), why[n]))
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		if err := e.remove(c.Context, n); err != nil {
			fmt.Fprintf(e.sys.Stderr, "sbuild: %v\n", err)
			failed++
			continue
		}
		fmt.Fprintln(e.sys.Stdout, e.tr.T("removed %s", container.EnrootName(n)))
	}
	if failed > 0 {
		return &cliwire.ExitError{Code: exitcode.Failure}
	}
	return nil
}

func remove(c *cli.Context, sys container.Sys) error {
	if c.NArg() == 0 {
		return cliwire.Usagef("give the container name(s) to remove, e.g. sbuild rm myproj (see sbuild list)")
	}
	e, err := loadEnv(c, sys)
	if err != nil {
		return err
	}
	var names []string
	for _, a := range c.Args().Slice() {
		n, err := container.CheckName(a)
		if err != nil {
			return cliwire.Usagef("%v", err)
		}
		ok, err := container.Exists(e.paths.Data, n)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no container %s in %s (see sbuild list)", container.EnrootName(n), e.paths.Data)
		}
		names = append(names, n)
	}
	return removeMany(c, e, names, nil)
}

func prune(c *cli.Context, sys container.Sys) error {
	e, err := loadEnv(c, sys)
	if err != nil {
		return err
	}
	es, err := container.List(e.paths.Data, false)
	if err != nil {
		return err
	}
	why := map[string]string{}
	var names []string
	for _, en := range es {
		if !en.HasMeta {
			continue // not made by sbuild: leave it alone
		}
		if _, err := os.Stat(en.Meta.Project); isNotExist(err) {
			why[en.Name] = e.tr.T(" (project %s is gone)", en.Meta.Project)
		} else if d := c.Duration("older-than"); d > 0 && sys.Now().Sub(en.Meta.Created) > d {
			why[en.Name] = e.tr.T(" (made %s)", e.tr.Time(en.Meta.Created.Local(), "2006-01-02"))
		} else {
			continue
		}
		names = append(names, en.Name)
	}
	orphans, err := container.OrphanMeta(e.paths.Data)
	if err != nil {
		return err
	}
	for _, o := range orphans {
		if err := os.Remove(container.MetaPath(e.paths.Data, o)); err == nil {
			sys.Logger.Info("removed metadata of a container that is gone", "name", o)
		}
	}
	if len(names) == 0 {
		fmt.Fprintln(sys.Stdout, e.tr.T("nothing to prune"))
		return nil
	}
	return removeMany(c, e, names, why)
}

func login(c *cli.Context, sys container.Sys) error {
	e, err := loadEnv(c, sys)
	if err != nil {
		return err
	}
	var key string
	if f := c.String("key-file"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return cliwire.Usagef("--key-file: %v", err)
		}
		key = strings.TrimSpace(string(data))
	} else if sys.StdinIsTerminal() {
		if key, err = sys.ReadSecret("NGC API key (from ngc.nvidia.com > Setup > API Key; input hidden): "); err != nil {
			return err
		}
	} else {
		data, err := io.ReadAll(io.LimitReader(sys.Stdin, 4096))
		if err != nil {
			return fmt.Errorf("read key from standard input: %w", err)
		}
		key = strings.TrimSpace(string(data))
	}
	if key == "" || strings.ContainsAny(key, " \t\n") {
		return cliwire.Usagef("the NGC API key is empty or holds spaces; paste the key exactly as ngc.nvidia.com shows it")
	}
	path := filepath.Join(e.paths.Config, ".credentials")
	if err := container.WriteCredentials(path, key); err != nil {
		return err
	}
	fmt.Fprintln(sys.Stdout, e.tr.T("wrote %s (nvcr.io and authn.nvidia.com, mode 600)", path))
	return nil
}

func check(c *cli.Context, sys container.Sys) error {
	e, p, err := makePlan(c, sys, nil)
	if err != nil {
		return err
	}
	fs := preflight(c.Context, e, p.img)
	credsFailed := false
	for _, f := range fs {
		credsFailed = credsFailed || f.Check == "credentials" && f.Level == container.Fail
	}
	if !credsFailed {
		if f := e.askRegistry(c.Context, p.img, c.Duration("registry-timeout")); f != nil {
			fs = append(fs, *f)
		}
	}
	if p.note != "" {
		fs = append(fs, container.Finding{Level: container.Warn, Check: "image", Msg: strings.TrimPrefix(p.note, "note: ")})
	}
	if len(fs) == 0 {
		fmt.Fprintln(sys.Stdout, e.tr.T("ok: srun, pyxis, credentials, the registry and enroot storage look fine for %s", p.build.Ref))
		return nil
	}
	if report(sys.Stdout, fs) {
		return &cliwire.ExitError{Code: exitcode.Failure}
	}
	return nil
}
