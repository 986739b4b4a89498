package containercmd

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/container"
)

// fake is a Sys whose outside world is recorded.
type fake struct {
	sys      container.Sys
	out, err bytes.Buffer
	execd    []string
	execEnv  []string
	ran      [][]string
	tty      bool
	squeue   string
	runCodes map[string]int
	onRun    func(argv []string)
}

func newFake(t *testing.T, cwd string, env map[string]string) *fake {
	f := &fake{runCodes: map[string]int{}}
	home := t.TempDir()
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "HOME" {
			return home
		}
		if k == "GPUSUITE_CONFIG" {
			return filepath.Join(home, "none.toml")
		}
		return ""
	}
	if _, ok := env["GPUSUITE_CONFIG"]; !ok {
		cfg := filepath.Join(home, "none.toml")
		os.WriteFile(cfg, []byte("[container]\nenroot_conf = \"/nonexistent\"\n"), 0o644)
	}
	f.sys = container.Sys{
		Stdin: strings.NewReader(""), Stdout: &f.out, Stderr: &f.err, Getenv: getenv,
		Environ:  func() []string { return []string{"PATH=/usr/bin", "KEEP=1"} },
		Getwd:    func() (string, error) { return cwd, nil },
		Now:      func() time.Time { return time.Date(2025, 4, 1, 12, 0, 0, 0, time.UTC) },
		LookPath: func(p string) (string, error) { return "/usr/bin/" + p, nil },
		Exec: func(path string, argv, env []string) error {
			f.execd, f.execEnv = argv, env
			return nil
		},
		Run: func(_ context.Context, c container.Cmd) (int, error) {
			f.ran = append(f.ran, c.Argv)
			if f.onRun != nil {
				f.onRun(c.Argv)
			}
			if c.Argv[0] == "squeue" {
				c.Stdout.Write([]byte(f.squeue))
			}
			if c.Argv[0] == "srun" && len(c.Argv) > 1 && c.Argv[1] == "--help" {
				c.Stdout.Write([]byte(strings.Join(container.PyxisOptions, "\n")))
			}
			return f.runCodes[c.Argv[0]], nil
		},
		StdinIsTerminal: func() bool { return f.tty },
		ReadSecret:      func(string) (string, error) { return "KEY", nil },
		Statfs:          func(string) (container.FSInfo, error) { return container.FSInfo{Avail: 1 << 40}, nil },
		User: func() (container.User, error) {
			return container.User{Name: "u", UID: 1000, GID: 1000, Home: home}, nil
		},
	}
	return f
}

func TestSrunWrapCLI(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "My Proj")
	os.MkdirAll(proj, 0o755)
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "pyxis_my-proj"), 0o755)
	env := map[string]string{"ENROOT_DATA_PATH": data}

	t.Run("exec", func(t *testing.T) {
		f := newFake(t, proj, env)
		code := SrunWrap([]string{"srun-wrap", "--gpus", "2", "-p", "dev", "--env", "A=x y", "--mount", "/data:/data:ro", "python", "t.py"}, f.sys)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, f.err.String())
		}
		want := []string{"srun", "--gpus=2", "-p", "dev", "--comment=gpusuite-container=my-proj", "--container-name=my-proj",
			"--container-mounts=" + proj + ":/workspace,/data:/data:ro", "--container-workdir=/workspace", "--container-env=A", "python", "t.py"}
		if d := cmp.Diff(want, f.execd); d != "" {
			t.Errorf("argv (-want +got)\n%s", d)
		}
		if d := cmp.Diff([]string{"PATH=/usr/bin", "KEEP=1", "A=x y"}, f.execEnv); d != "" {
			t.Errorf("env (-want +got)\n%s", d)
		}
	})
	t.Run("interactive", func(t *testing.T) {
		f := newFake(t, proj, env)
		f.tty = true
		if code := SrunWrap([]string{"srun-wrap"}, f.sys); code != 0 {
			t.Fatalf("exit %d: %s", code, f.err.String())
		}
		if got := strings.Join(f.execd[len(f.execd)-3:], " "); got != "--pty bash -i" {
			t.Errorf("tail of argv = %q", got)
		}
	})
	t.Run("config and env", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "g.toml")
		os.WriteFile(cfg, []byte("[container]\ngpus = 3\npartition = \"site\"\nmounts = [\"/data:/data\"]\nsrun_args = [\"--mpi=pmix\"]\nenroot_conf = \"/nonexistent\"\n"), 0o644)
		t.Setenv("GPUSUITE_GPUS", "0") // urfave/cli reads flag variables from the process
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data, "GPUSUITE_CONFIG": cfg})
		if code := SrunWrap([]string{"srun-wrap", "--partition", "mine", "true"}, f.sys); code != 0 {
			t.Fatalf("exit %d: %s", code, f.err.String())
		}
		got := strings.Join(f.execd, " ")
		for _, w := range []string{"--partition=mine", "--mpi=pmix", ":/workspace,/data:/data "} {
			if !strings.Contains(got, w) {
				t.Errorf("argv %q lacks %q", got, w)
			}
		}
		if strings.Contains(got, "--gpus") || strings.Contains(got, "site") {
			t.Errorf("GPUSUITE_GPUS=0 and --partition should win: %q", got)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		cwd  string
		code int
		want string
	}{
		{name: "no command, no terminal", args: nil, code: 2, want: "no command given and standard input is not a terminal"},
		{name: "unknown option", args: []string{"--frobnicate", "x"}, code: 2, want: "unknown option --frobnicate"},
		{name: "bad mount", args: []string{"--mount", "/a,b:/b", "x"}, code: 2, want: "contains ','"},
		{name: "bad env", args: []string{"--env", "1A=b", "x"}, code: 2, want: "is not a variable name"},
		{name: "unset env", args: []string{"--env", "NOPE", "x"}, code: 2, want: "NOPE is not set here"},
		{name: "bad name", args: []string{"--name", "My:Proj", "x"}, code: 2, want: `use "my-proj" instead`},
		{name: "no container", args: []string{"--name", "other", "x"}, code: 1, want: "container pyxis_other does not exist in " + data + "; build it first: sbuild --name other [IMAGE]"},
		{name: "missing config", args: []string{"x"}, env: map[string]string{"GPUSUITE_CONFIG": "/nonexistent/g.toml"}, code: 1, want: `read config "/nonexistent/g.toml"`},
		{name: "bad log level", args: []string{"--log-level", "loud", "x"}, code: 2, want: `log level "loud"`},
		{name: "colon in cwd", args: []string{"x"}, cwd: "/tmp/a:b", code: 1, want: `project directory "/tmp/a:b" contains ":"`},
		{name: "batch missing", args: []string{"--batch", "nope.sh"}, code: 2, want: "--batch nope.sh: no such file"},
		{name: "batch without script", args: []string{"--batch"}, code: 2, want: "--batch needs the job script"},
		{name: "bad time", args: []string{"--time", "garbage", "x"}, code: 2, want: `--time "garbage" is not a Slurm time limit; write MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED`},
		{name: "bad configured time", args: []string{"x"}, env: map[string]string{"GPUSUITE_CONFIG": badTimeConfig(t)}, code: 1, want: `key "container.time": "soon" is not a Slurm time limit`},
		{name: "root directory", args: []string{"x"}, cwd: "/", code: 2, want: "the current directory is /, which srun-wrap would mount writable in the container; cd to your project directory first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"ENROOT_DATA_PATH": data}
			for k, v := range tc.env {
				e[k] = v
			}
			cwd := proj
			if tc.cwd != "" {
				cwd = tc.cwd
			}
			f := newFake(t, cwd, e)
			code := SrunWrap(append([]string{"srun-wrap"}, tc.args...), f.sys)
			lines := strings.Split(strings.TrimSpace(f.err.String()), "\n")
			if code != tc.code || !strings.Contains(f.err.String(), tc.want) || len(lines) != 1 || f.execd != nil {
				t.Errorf("exit %d, stderr %q; want exit %d, one line with %q, no exec", code, f.err.String(), tc.code, tc.want)
			}
		})
	}
	t.Run("bad time variable", func(t *testing.T) {
		t.Setenv("GPUSUITE_TIME", "1h") // urfave/cli reads flag variables from the process
		f := newFake(t, proj, env)
		code := SrunWrap([]string{"srun-wrap", "x"}, f.sys)
		if code != 2 || !strings.Contains(f.err.String(), `--time "1h" is not a Slurm time limit`) || f.execd != nil {
			t.Errorf("exit %d: %s", code, f.err.String())
		}
	})
	t.Run("srun missing", func(t *testing.T) {
		f := newFake(t, proj, env)
		f.sys.LookPath = func(string) (string, error) { return "", errors.New("not found") }
		if code := SrunWrap([]string{"srun-wrap", "x"}, f.sys); code != 1 || !strings.Contains(f.err.String(), "srun is not on PATH") {
			t.Errorf("exit %d: %s", code, f.err.String())
		}
	})
	t.Run("exec fails", func(t *testing.T) {
		f := newFake(t, proj, env)
		f.sys.Exec = func(string, []string, []string) error { return fs.ErrPermission }
		if code := SrunWrap([]string{"srun-wrap", "x"}, f.sys); code != 1 || !strings.Contains(f.err.String(), "exec /usr/bin/srun") {
			t.Errorf("exit %d: %s", code, f.err.String())
		}
	})
	t.Run("batch", func(t *testing.T) {
		os.WriteFile(filepath.Join(proj, "train.sh"), []byte("#!/bin/bash\n#SBATCH --time=5\npython t.py\n"), 0o644)
		f := newFake(t, proj, env)
		var script string
		f.sys.Run = func(_ context.Context, c container.Cmd) (int, error) {
			f.ran = append(f.ran, c.Argv)
			b, _ := readAll(c.Stdin)
			script = b
			return 3, nil
		}
		code := SrunWrap([]string{"srun-wrap", "--batch", "-J", "tr", "train.sh", "--lr", "0.1"}, f.sys)
		if code != 3 || len(f.ran) != 1 || f.ran[0][0] != "sbatch" {
			t.Fatalf("exit %d, ran %v: %s", code, f.ran, f.err.String())
		}
		if !strings.Contains(script, "#SBATCH --time=5\n") || !strings.Contains(script, "bash ./train.sh --lr 0.1\n") {
			t.Errorf("script:\n%s", script)
		}
	})
	t.Run("help", func(t *testing.T) {
		f := newFake(t, proj, env)
		if code := SrunWrap([]string{"srun-wrap", "--help"}, f.sys); code != 0 || !strings.Contains(f.out.String(), "Examples:") {
			t.Errorf("exit %d: %s", code, f.out.String())
		}
	})
}

// badTimeConfig is a configuration whose container.time Slurm cannot read.
func badTimeConfig(t *testing.T) string {
	cfg := filepath.Join(t.TempDir(), "g.toml")
	if err := os.WriteFile(cfg, []byte("[container]\ntime = \"soon\"\nenroot_conf = \"/nonexistent\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readAll(r interface{ Read([]byte) (int, error) }) (string, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.String(), err
}

// pyxisInto plays pyxis and enroot for the fake: srun with
// --container-name=NAME:create makes the container directory holding the
// image's name, enroot remove removes one.
func pyxisInto(data string) func(argv []string) {
	return func(argv []string) {
		if argv[0] == "srun" {
			var name, image string
			for _, a := range argv {
				if v, ok := strings.CutPrefix(a, "--container-name="); ok {
					name, _ = strings.CutSuffix(v, ":create")
				}
				if v, ok := strings.CutPrefix(a, "--container-image="); ok {
					image = v
				}
			}
			if name != "" && image != "" {
				os.MkdirAll(filepath.Join(data, "pyxis_"+name), 0o755)
				os.WriteFile(filepath.Join(data, "pyxis_"+name, "image"), []byte(image), 0o644)
			}
		}
		if argv[0] == "enroot" && argv[1] == "remove" {
			os.RemoveAll(filepath.Join(data, argv[len(argv)-1]))
		}
	}
}

func TestSbuildCLI(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "setup.sh"), []byte("pip install x\n"), 0o644)

	t.Run("dry run", func(t *testing.T) {
		data := t.TempDir()
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		code := Sbuild([]string{"sbuild", "nvcr.io/nvidia/pytorch:24.05-py3", "--setup", "setup.sh", "--dry-run", "--", "--nodelist=n1"}, f.sys)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, f.err.String())
		}
		want := "srun --comment=gpusuite-container=proj --nodelist=n1 '--container-image=nvcr.io#nvidia/pytorch:24.05-py3' --container-name=proj:create --container-writable --container-remap-root --container-mounts=" + proj + ":/workspace --container-workdir=/workspace bash ./setup.sh\n"
		_ = want
		got := f.out.String()
		if !strings.Contains(got, "--nodelist=n1") || !strings.Contains(got, "'--container-image=nvcr.io#nvidia/pytorch:24.05-py3' --container-name=proj:create --container-writable --container-remap-root") || !strings.HasSuffix(got, "bash ./setup.sh\n") {
			t.Errorf("dry run printed %q", got)
		}
		if !strings.Contains(f.err.String(), "note: enroot 3.4.1") && !strings.Contains(f.err.String(), "note: enroot of unknown version") {
			t.Errorf("no rewrite note: %q", f.err.String())
		}
	})
	t.Run("build, exists, rebuild busy, rebuild", func(t *testing.T) {
		data := t.TempDir()
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		f.onRun = pyxisInto(data)
		os.MkdirAll(filepath.Join(t.TempDir(), "x"), 0o755)
		code := Sbuild([]string{"sbuild", "ubuntu:22.04", "--setup", "setup.sh"}, f.sys)
		if code != 0 || f.out.String() != "pyxis_proj\n" {
			t.Fatalf("exit %d, out %q: %s", code, f.out.String(), f.err.String())
		}
		m, ok, err := container.ReadMeta(data, "proj")
		if !ok || err != nil || m.Image != "ubuntu:22.04" || m.Tag != "22.04" || len(m.SetupSHA256) != 64 || m.Project != proj {
			t.Errorf("meta %+v %v %v", m, ok, err)
		}
		f.out.Reset()
		f.err.Reset()
		if code := Sbuild([]string{"sbuild", "ubuntu:24.04"}, f.sys); code != 1 || !strings.Contains(f.err.String(), "already exists (made 2025-04-01") || !strings.Contains(f.err.String(), "sbuild --rebuild") {
			t.Errorf("exists: exit %d: %s", code, f.err.String())
		}
		f.err.Reset()
		f.squeue = "77|gpusuite-container=proj\n"
		if code := Sbuild([]string{"sbuild", "--rebuild", "ubuntu:24.04"}, f.sys); code != 1 || !strings.Contains(f.err.String(), "refusing to rebuild pyxis_proj: your job 77 is using it") {
			t.Errorf("busy: exit %d: %s", code, f.err.String())
		}
		f.err.Reset()
		f.squeue = ""
		f.ran = nil
		if code := Sbuild([]string{"sbuild", "ubuntu:24.04", "--rebuild"}, f.sys); code != 0 {
			t.Errorf("rebuild: exit %d: %s", code, f.err.String())
		}
		if m, _, _ := container.ReadMeta(data, "proj"); m.Image != "ubuntu:24.04" || m.Setup != "" {
			t.Errorf("meta after rebuild %+v", m)
		}
		// The new one was built beside the old one, which was removed
		// only once the new one was in its place.
		var removed, built bool
		for _, r := range f.ran {
			built = built || strings.Contains(strings.Join(r, " "), "--container-name=proj.sbuild-new:create")
			removed = removed || strings.Join(r, " ") == "enroot remove --force pyxis_proj.sbuild-old"
		}
		if !built || !removed {
			t.Errorf("built as proj.sbuild-new %v, removed pyxis_proj.sbuild-old %v: %v", built, removed, f.ran)
		}
		if img, _ := os.ReadFile(filepath.Join(data, "pyxis_proj", "image")); string(img) != "ubuntu:24.04" {
			t.Errorf("pyxis_proj holds %q after the rebuild, want ubuntu:24.04", img)
		}
		if des, _ := os.ReadDir(data); len(des) != 2 {
			t.Errorf("data path holds %d entries after the rebuild, want the container and its metadata", len(des))
		}
		f.out.Reset()
		if code := Sbuild([]string{"sbuild", "list", "--no-size"}, f.sys); code != 0 || !strings.Contains(f.out.String(), "\nproj  pyxis_proj ") || !strings.Contains(f.out.String(), "ubuntu:24.04") {
			t.Errorf("list: exit %d:\n%s%s", code, f.out.String(), f.err.String())
		}
	})
	t.Run("setup fails", func(t *testing.T) {
		data := t.TempDir()
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		f.runCodes["srun"] = 7
		f.onRun = func(argv []string) {
			if argv[0] == "srun" && argv[1] != "--help" {
				os.MkdirAll(filepath.Join(data, "pyxis_proj"), 0o755)
			}
		}
		code := Sbuild([]string{"sbuild", "--setup", "setup.sh", "ubuntu"}, f.sys)
		if code != 7 || !strings.Contains(f.err.String(), "setup script "+proj+"/setup.sh failed with exit code 7; pyxis_proj is kept") {
			t.Errorf("exit %d: %s", code, f.err.String())
		}
		if m, _, _ := container.ReadMeta(data, "proj"); m.SetupExit != 7 {
			t.Errorf("meta %+v", m)
		}
	})
	t.Run("pull fails", func(t *testing.T) {
		data := t.TempDir()
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		f.runCodes["srun"] = 1
		f.sys.Run = func(_ context.Context, c container.Cmd) (int, error) {
			if len(c.Argv) > 1 && c.Argv[1] == "--help" {
				c.Stdout.Write([]byte(strings.Join(container.PyxisOptions, " ")))
				return 0, nil
			}
			c.Stderr.Write([]byte("[ERROR] URL https://nvcr.io/v2/ returned error code: 401 Unauthorized\n"))
			return 1, nil
		}
		code := Sbuild([]string{"sbuild", "ubuntu"}, f.sys)
		if code != 1 || !strings.Contains(f.err.String(), "creating pyxis_proj failed (srun exit 1): the registry refused the login (401)") {
			t.Errorf("exit %d: %s", code, f.err.String())
		}
	})
	t.Run("preflight stops", func(t *testing.T) {
		data := t.TempDir()
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		f.sys.Statfs = func(string) (container.FSInfo, error) { return container.FSInfo{Avail: 1 << 30}, nil }
		code := Sbuild([]string{"sbuild", "nvcr.io/nvidia/pytorch:24.05-py3"}, f.sys)
		e := f.err.String()
		if code != 1 || !strings.Contains(e, "error: no enroot credentials") || !strings.Contains(e, "has only 1.0 GiB free") || !strings.Contains(e, "not building pyxis_proj") {
			t.Errorf("exit %d: %s", code, e)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing setup", []string{"--setup", "nope.sh"}, 2, "--setup nope.sh: no such file"},
		{"bad image", []string{"docker://ubuntu"}, 2, "leave out the docker:// prefix"},
		{"two images", []string{"a", "b"}, 2, "one IMAGE at most"},
		{"unknown flag", []string{"--colour"}, 2, "unknown option --colour"},
		{"save dir", []string{"--save", "/tmp/"}, 2, "give a file name"},
		{"rm nothing", []string{"rm"}, 2, "give the container name(s)"},
		{"rm unknown", []string{"rm", "ghost", "--yes"}, 1, "no container pyxis_ghost"},
		{"bad key file", []string{"login", "--key-file", "/nonexistent/k"}, 2, "--key-file"},
		{"negative gpus", []string{"--gpus", "-3", "ubuntu"}, 2, "--gpus -3: give 0 or more"},
		{"negative gpus attached", []string{"--gpus=-1", "ubuntu"}, 2, "--gpus -1: give 0 or more"},
		{"bad time", []string{"--time", "garbage", "ubuntu"}, 2, `--time "garbage" is not a Slurm time limit; write MINUTES`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": t.TempDir()})
			code := Sbuild(append([]string{"sbuild"}, tc.args...), f.sys)
			lines := strings.Split(strings.TrimSpace(f.err.String()), "\n")
			if code != tc.code || !strings.Contains(f.err.String(), tc.want) || len(lines) != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d, one line with %q", code, f.err.String(), tc.code, tc.want)
			}
		})
	}
	t.Run("root directory", func(t *testing.T) {
		for _, sub := range [][]string{{"ubuntu"}, {"--dry-run", "ubuntu"}, {"check", "ubuntu"}} {
			f := newFake(t, "/", map[string]string{"ENROOT_DATA_PATH": t.TempDir()})
			code := Sbuild(append([]string{"sbuild"}, sub...), f.sys)
			lines := strings.Split(strings.TrimSpace(f.err.String()), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(f.err.String(), "the current directory is /, which sbuild would mount writable in the container; cd to your project directory first") || len(f.ran) != 0 && f.ran[len(f.ran)-1][0] == "srun" {
				t.Errorf("sbuild %v: exit %d, ran %v, stderr %q", sub, code, f.ran, f.err.String())
			}
		}
	})
	t.Run("rm asks", func(t *testing.T) {
		data := t.TempDir()
		os.MkdirAll(filepath.Join(data, "pyxis_old"), 0o755)
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		if code := Sbuild([]string{"sbuild", "rm", "pyxis_old"}, f.sys); code != 2 || !strings.Contains(f.err.String(), "add --yes") {
			t.Errorf("no terminal: exit %d: %s", code, f.err.String())
		}
		f.tty, f.sys.Stdin = true, strings.NewReader("n\n")
		f.ran = nil
		if code := Sbuild([]string{"sbuild", "rm", "old"}, f.sys); code != 0 || len(f.ran) != 1 {
			t.Errorf("answered no: exit %d, ran %v", code, f.ran)
		}
		f.sys.Stdin = strings.NewReader("y\n")
		if code := Sbuild([]string{"sbuild", "rm", "old"}, f.sys); code != 0 || strings.Join(f.ran[len(f.ran)-1], " ") != "enroot remove --force pyxis_old" {
			t.Errorf("answered yes: exit %d, ran %v: %s", code, f.ran, f.err.String())
		}
	})
	t.Run("prune", func(t *testing.T) {
		data := t.TempDir()
		for _, n := range []string{"gone", "here", "manual"} {
			os.MkdirAll(filepath.Join(data, "pyxis_"+n), 0o755)
		}
		container.WriteMeta(data, container.Meta{Name: "gone", Project: "/nonexistent/proj", Created: time.Now()})
		container.WriteMeta(data, container.Meta{Name: "here", Project: proj, Created: time.Now()})
		container.WriteMeta(data, container.Meta{Name: "orphan", Project: proj})
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
		if code := Sbuild([]string{"sbuild", "prune", "--yes"}, f.sys); code != 0 {
			t.Fatalf("exit %d: %s", code, f.err.String())
		}
		if strings.Join(f.ran[len(f.ran)-1], " ") != "enroot remove --force pyxis_gone" || !strings.Contains(f.out.String(), "removed pyxis_gone") {
			t.Errorf("ran %v out %q", f.ran, f.out.String())
		}
		if _, err := os.Stat(container.MetaPath(data, "orphan")); !isNotExist(err) {
			t.Errorf("orphan metadata kept: %v", err)
		}
	})
	t.Run("login", func(t *testing.T) {
		f := newFake(t, proj, nil)
		f.sys.Stdin = strings.NewReader("SECRETKEY\n")
		if code := Sbuild([]string{"sbuild", "login"}, f.sys); code != 0 {
			t.Fatalf("exit %d: %s", code, f.err.String())
		}
		u, _ := f.sys.User()
		path := filepath.Join(u.Home, ".config/enroot/.credentials")
		data, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 || container.CheckCredentials("nvcr.io", path, data, fi.Mode(), nil) != nil {
			t.Errorf("credentials %v %v:\n%s", err, fi.Mode(), data)
		}
		f.out.Reset()
		if code := Sbuild([]string{"sbuild", "check", "nvcr.io/nvidia/pytorch:24.05-py3"}, f.sys); code != 0 || !strings.Contains(f.out.String(), "warning: enroot of unknown version") {
			t.Errorf("check after login: exit %d: %s%s", code, f.out.String(), f.err.String())
		}
	})
}

// TestSbuildOptionsAnywhere: sbuild's own options work after a command
// too, and a command's unknown option is a usage error in one line.
func TestSbuildOptionsAnywhere(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(proj, 0o755)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // in stdout
		err  string // the one stderr line holds it; "": no stderr
	}{
		{"config after list", []string{"list", "--config", "CFG"}, 0, "no containers in", ""},
		{"config= after list", []string{"list", "--no-size", "--config=CFG"}, 0, "no containers in", ""},
		{"log level after check", []string{"check", "--log-level", "error", "ubuntu"}, 0, "ok: srun, pyxis", ""},
		{"timeout after the image", []string{"check", "ubuntu", "--registry-timeout", "5s"}, 0, "ok: srun, pyxis", ""},
		{"bad log level after check", []string{"check", "ubuntu", "--log-level", "loud"}, 2, "", "loud"},
		{"unknown option of a command", []string{"list", "--colour"}, 2, "", "sbuild: unknown option --colour (see sbuild --help)"},
		{"srun options stay srun's", []string{"--dry-run", "ubuntu", "--", "--config=x"}, 0, "--config=x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": t.TempDir()})
			cfg := filepath.Join(t.TempDir(), "site.toml")
			os.WriteFile(cfg, []byte("[container]\nenroot_conf = \"/nonexistent\"\n"), 0o644)
			args := []string{"sbuild"}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "CFG", cfg))
			}
			code := Sbuild(args, f.sys)
			lines := strings.Split(strings.TrimSpace(f.err.String()), "\n")
			errOK := tc.err == "" && !strings.Contains(f.err.String(), "sbuild:") || tc.err != "" && len(lines) == 1 && strings.Contains(lines[0], tc.err)
			if code != tc.code || !strings.Contains(f.out.String(), tc.out) || !errOK {
				t.Errorf("sbuild %v: exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout with %q, stderr %q", tc.args, code, f.out.String(), f.err.String(), tc.code, tc.out, tc.err)
			}
		})
	}
}
