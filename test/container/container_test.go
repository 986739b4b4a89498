// Package container_test runs the real sbuild and srun-wrap against the
// test harness's real Slurm (srun, sbatch, squeue), with a stand-in pyxis
// SPANK plugin (test/slurm/spank/pyxis_stub.c) that records on the node
// what it received, and a stand-in enroot (testdata/enroot).
package container_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/pty"
	"github.com/aicloud/gpusuite/internal/testkit/registry"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// cluster is what a test needs to reach the harness's Slurm.
type cluster struct {
	env     map[string]string // from the harness's env file
	bin     string            // directory with sbuild and srun-wrap
	records string            // the stub plugin's record directory
	stubDir string            // directory holding the stand-in enroot
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{env: slurm.Get(t).Vars}
	if c.env["GPUSUITE_SLURM_DIR"] == "" {
		t.Fatal("the harness env lacks GPUSUITE_SLURM_DIR")
	}
	c.records = filepath.Join(c.env["GPUSUITE_SLURM_DIR"], "spank-records")
	wd, _ := os.Getwd()
	c.stubDir = filepath.Join(wd, "testdata")
	c.bin = os.Getenv("GPUSUITE_BIN")
	if c.bin == "" {
		c.bin = t.TempDir()
		root := filepath.Join(wd, "..", "..")
		cmd := exec.Command("go", "build", "-o", c.bin+"/", "./sbuild", "./srun-wrap")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	help, _ := exec.Command("srun", "--help").CombinedOutput()
	if !strings.Contains(string(help), "[pyxis stub]") {
		cmd := exec.Command("env", "SLURM_CONF="+c.env["SLURM_CONF"], "srun", "--help")
		help, _ = cmd.CombinedOutput()
		if !strings.Contains(string(help), "[pyxis stub]") {
			t.Fatalf("the pyxis stub SPANK plugin is not loaded (srun --help lacks it): restart the harness (test/slurm/harness.sh stop; start) so it compiles test/slurm/spank/pyxis_stub.c")
		}
	}
	return c
}

// project is one user's project directory and enroot state.
type project struct {
	c       *cluster
	dir     string
	name    string
	data    string
	home    string
	stubLog string
	environ []string
}

func (c *cluster) project(t *testing.T, name string) *project {
	root := t.TempDir()
	p := &project{c: c, dir: filepath.Join(root, name), name: name, data: filepath.Join(root, "enroot-data"), home: filepath.Join(root, "home"), stubLog: filepath.Join(root, "enroot.log")}
	for _, d := range []string{p.dir, p.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(root, "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte("[container]\nimage = \"ubuntu:22.04\"\ngpus = 1\nmin_free_gib = 0\nenroot_conf = \"/nonexistent\"\ntime = \"5\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.environ = []string{
		"PATH=" + c.stubDir + ":" + os.Getenv("PATH"),
		"HOME=" + p.home,
		"USER=root",
		"SLURM_CONF=" + c.env["SLURM_CONF"],
		"ENROOT_DATA_PATH=" + p.data,
		"ENROOT_STUB_LOG=" + p.stubLog,
		"GPUSUITE_CONFIG=" + cfg,
		// sbuild asks an image's registry before it builds; the images
		// of these tests are on Docker Hub, which a test must not depend
		// on: a proxy no one listens on makes every such question fail at
		// once (a warning). Loopback registries are never proxied.
		"HTTPS_PROXY=http://127.0.0.1:1",
	}
	return p
}

func (p *project) cmd(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.c.bin, prog), args...)
	cmd.Dir = p.dir
	cmd.Env = p.environ
	return cmd
}

type result struct {
	code           int
	stdout, stderr string
}

func (p *project) run(t *testing.T, stdin string, prog string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.cmd(ctx, prog, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", prog, args, err)
	}
	return result{code, out.String(), errb.String()}
}

// record is one file the stub plugin wrote on the node.
type record map[string]string

// records returns the stub's records of tasks that ran in dir.
func (c *cluster) recordsIn(t *testing.T, dir string) []record {
	t.Helper()
	des, err := os.ReadDir(c.records)
	if err != nil {
		t.Fatalf("read records: %v", err)
	}
	var out []record
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".rec") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.records, de.Name()))
		if err != nil {
			continue
		}
		r := record{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				r[k] = v
			}
		}
		if r["cwd"] == dir {
			out = append(out, r)
		}
	}
	return out
}

func (r record) argv() string {
	var a []string
	for i := 0; ; i++ {
		v, ok := r[fmt.Sprintf("argv.%d", i)]
		if !ok {
			return strings.Join(a, " ")
		}
		a = append(a, v)
	}
}

func wantRecord(t *testing.T, r record, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if r[k] != v {
			t.Errorf("on the node %s = %q, want %q (record %v)", k, r[k], v, r)
		}
	}
}

func TestSbuildCreatesOnceAndRebuilds(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "Proj One")
	if err := os.WriteFile(filepath.Join(p.dir, "setup.sh"), []byte("echo set up >setup.out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.run(t, "", "sbuild", "--setup", "setup.sh")
	if r.code != 0 || r.stdout != "pyxis_proj-one\n" {
		t.Fatalf("sbuild: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	recs := p.c.recordsIn(t, p.dir)
	if len(recs) != 1 {
		t.Fatalf("%d records from the node, want 1", len(recs))
	}
	wantRecord(t, recs[0], map[string]string{
		"opt.container-image": "ubuntu:22.04", "opt.container-name": "proj-one:create",
		"opt.container-writable": "1", "opt.container-remap-root": "1",
		"opt.container-mounts": p.dir + ":/workspace", "opt.container-workdir": "/workspace", "result": "ok",
	})
	if got := recs[0].argv(); got != "bash ./setup.sh" {
		t.Errorf("setup ran as %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(p.dir, "setup.out")); err != nil || string(b) != "set up\n" {
		t.Errorf("setup script did not run: %v %q", err, b)
	}
	meta, err := os.ReadFile(filepath.Join(p.data, ".pyxis_proj-one.gpusuite.json"))
	if err != nil || !strings.Contains(string(meta), `"setup_sha256": "`) || !strings.Contains(string(meta), `"image": "ubuntu:22.04"`) {
		t.Errorf("metadata %v:\n%s", err, meta)
	}

	// Again: pyxis would reuse it silently; sbuild says so and stops.
	r = p.run(t, "", "sbuild", "ubuntu:24.04")
	if r.code != 1 || !strings.Contains(r.stderr, "container pyxis_proj-one already exists") || !strings.Contains(r.stderr, "sbuild --rebuild") {
		t.Errorf("second sbuild: exit %d\n%s", r.code, r.stderr)
	}
	// --rebuild removes it with enroot and creates it from the new image.
	r = p.run(t, "", "sbuild", "ubuntu:24.04", "--rebuild")
	if r.code != 0 {
		t.Fatalf("rebuild: exit %d\n%s", r.code, r.stderr)
	}
	// The new one was built beside the old one, which was removed only
	// once the new one had taken its place.
	if log, _ := os.ReadFile(p.stubLog); !strings.Contains(string(log), "enroot remove --force pyxis_proj-one.sbuild-old") {
		t.Errorf("enroot calls: %s", log)
	}
	if img, _ := os.ReadFile(filepath.Join(p.data, "pyxis_proj-one", "image")); string(img) != "ubuntu:24.04\n" {
		t.Errorf("container holds image %q after rebuild", img)
	}
	// list shows it, rm removes it.
	r = p.run(t, "", "sbuild", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "proj-one") || !strings.Contains(r.stdout, "ubuntu:24.04") {
		t.Errorf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.run(t, "", "sbuild", "rm", "pyxis_proj-one")
	if r.code != 2 || !strings.Contains(r.stderr, "add --yes") {
		t.Errorf("rm without terminal: exit %d\n%s", r.code, r.stderr)
	}
	r = p.run(t, "", "sbuild", "rm", "--yes", "proj-one")
	if _, err := os.Stat(filepath.Join(p.data, "pyxis_proj-one")); r.code != 0 || err == nil {
		t.Errorf("rm: exit %d, container still there: %v\n%s", r.code, err, r.stderr)
	}
}

// TestSbuildRebuildKeepsOldContainer: sbuild asks the image's registry (a
// real one, TLS and htpasswd) before it submits, and a rebuild that fails
// anywhere leaves the container the user had.
func TestSbuildRebuildKeepsOldContainer(t *testing.T) {
	t.Parallel()
	reg := registry.Start(t)
	reg.Push(t, "team/img", "1.0")
	reg.Push(t, "team/img", "2.0")
	p := newCluster(t).project(t, "keepme")
	// enroot 4 reads host/repo:tag as written, so sbuild hands it on
	// unchanged and prints no note.
	p.environ = append(p.environ, "SSL_CERT_FILE="+reg.CAFile, "ENROOT_STUB_VERSION=4.1.2")
	creds := filepath.Join(p.home, ".config", "enroot", ".credentials")
	setCreds := func(password string) {
		os.MkdirAll(filepath.Dir(creds), 0o700)
		if err := os.WriteFile(creds, []byte("machine 127.0.0.1 login "+reg.User+" password "+password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setCreds(reg.Password)
	image := func() string {
		b, _ := os.ReadFile(filepath.Join(p.data, "pyxis_keepme", "image"))
		return strings.TrimSpace(string(b))
	}
	good := reg.Addr + "/team/img:1.0"
	r := p.run(t, "", "sbuild", good)
	if r.code != 0 || image() != reg.Addr+"/team/img:1.0" {
		t.Fatalf("sbuild %s: exit %d, container holds %q\n%s", good, r.code, image(), r.stderr)
	}
	jobs := len(p.c.recordsIn(t, p.dir))

	// Refused from the head server, in one line, without a job.
	for _, tc := range []struct {
		name, password, image, want string
	}{
		{"wrong tag", reg.Password, reg.Addr + "/team/img:99.99-typo", "sbuild: tag 99.99-typo not found in " + reg.Addr + "/team/img; pyxis_keepme is kept as it was\n"},
		{"expired key", "expired", reg.Addr + "/team/img:2.0", "sbuild: " + reg.Addr + " refused your credentials: fix the \"machine 127.0.0.1\" line in " + creds + "; pyxis_keepme is kept as it was\n"},
	} {
		setCreds(tc.password)
		r = p.run(t, "", "sbuild", "--rebuild", tc.image)
		if r.code != 1 || r.stderr != tc.want {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", tc.name, r.code, r.stderr, tc.want)
		}
		if n := len(p.c.recordsIn(t, p.dir)); n != jobs {
			t.Errorf("%s: %d jobs ran for a refused rebuild", tc.name, n-jobs)
		}
		if image() != reg.Addr+"/team/img:1.0" {
			t.Errorf("%s: the container holds %q after the refused rebuild", tc.name, image())
		}
	}
	setCreds(reg.Password)

	// Failures the registry cannot foresee: the job's own, and the setup's.
	os.WriteFile(filepath.Join(p.dir, "fail.sh"), []byte("exit 3\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"job refused", []string{"--rebuild", reg.Addr + "/team/img:2.0", "--", "--partition=nosuchpart"}, 1, "; the old pyxis_keepme is kept\n"},
		{"setup fails", []string{"--rebuild", "--setup", "fail.sh", reg.Addr + "/team/img:2.0"}, 3, "the old pyxis_keepme is kept, and the new one is pyxis_keepme.sbuild-new so you can look inside"},
	} {
		r = p.run(t, "", "sbuild", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "removing the old") {
			t.Errorf("%s: exit %d\n%s\nwant exit %d and %q", tc.name, r.code, r.stderr, tc.code, tc.want)
		}
		if image() != reg.Addr+"/team/img:1.0" {
			t.Errorf("%s: the container holds %q after the failed rebuild", tc.name, image())
		}
	}

	// A rebuild that works replaces it and leaves nothing beside it.
	r = p.run(t, "", "sbuild", "--rebuild", reg.Addr+"/team/img:2.0")
	if r.code != 0 || image() != reg.Addr+"/team/img:2.0" {
		t.Fatalf("rebuild: exit %d, container holds %q\n%s", r.code, image(), r.stderr)
	}
	des, _ := os.ReadDir(p.data)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if want := []string{".pyxis_keepme.gpusuite.json", "pyxis_keepme"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("enroot data path holds %v, want %v", names, want)
	}
}

func TestSbuildSetupFailurePropagates(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "setupfail")
	os.WriteFile(filepath.Join(p.dir, "setup.sh"), []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o644)
	r := p.run(t, "", "sbuild", "--setup", "setup.sh", "--save", "img.sqsh")
	if r.code != 3 || !strings.Contains(r.stderr, "setup.sh failed with exit code 3; pyxis_setupfail is kept") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	recs := p.c.recordsIn(t, p.dir)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	wantRecord(t, recs[0], map[string]string{"opt.container-save": filepath.Join(p.dir, "img.sqsh")})
	if got := recs[0].argv(); got != "/bin/sh ./setup.sh" {
		t.Errorf("setup ran as %q", got)
	}
	r = p.run(t, "", "sbuild", "list", "--no-size")
	if !strings.Contains(r.stdout, "FAILED(3)") {
		t.Errorf("list does not show the failed setup:\n%s", r.stdout)
	}
}

func TestSrunWrapRunsInContainer(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "runner")
	// Not built yet: say how to build it, submit nothing.
	r := p.run(t, "", "srun-wrap", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "container pyxis_runner does not exist") || !strings.Contains(r.stderr, "sbuild [IMAGE] (in "+p.dir+")") {
		t.Fatalf("missing container: exit %d\n%s", r.code, r.stderr)
	}
	os.MkdirAll(filepath.Join(p.data, "pyxis_runner"), 0o755)
	// No command and no terminal: refuse, submit nothing.
	r = p.run(t, "", "srun-wrap")
	if r.code != 2 || !strings.Contains(r.stderr, "not a terminal") {
		t.Fatalf("no command: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(p.c.recordsIn(t, p.dir)); n != 0 {
		t.Fatalf("%d jobs ran for refused commands", n)
	}
	r = p.run(t, "", "srun-wrap", "--gpus", "2", "--mount", "/etc:/host-etc:ro", "--env", "GREETING=hello world", "-J", "wraptest",
		"sh", "-c", `echo "out:$GREETING"; exit 42`)
	if r.code != 42 || !strings.Contains(r.stdout, "out:hello world") {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	recs := p.c.recordsIn(t, p.dir)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	wantRecord(t, recs[0], map[string]string{
		"opt.container-name": "runner", "opt.container-mounts": p.dir + ":/workspace,/etc:/host-etc:ro",
		"opt.container-workdir": "/workspace", "opt.container-env": "GREETING", "env.GREETING": "hello world", "result": "ok",
	})
	if recs[0]["pty"] != "" || recs[0]["opt.container-image"] != "" {
		t.Errorf("non-interactive run got a pty or an image: %v", recs[0])
	}
}

func TestSrunWrapSignalAndBusyContainer(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "sigproj")
	os.MkdirAll(filepath.Join(p.data, "pyxis_sigproj"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.cmd(ctx, "srun-wrap", "sh", "-c", `trap 'echo USR1 >got; exit 43' USR1; echo up >ready; while :; do sleep 0.1; done`)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(p.dir, "ready")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("job never started\n%s", errb.String())
		}
	}
	// srun-wrap replaced itself with srun: the pid we started is srun.
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); strings.TrimSpace(string(comm)) != "srun" {
		t.Errorf("process %d is %q, not srun", cmd.Process.Pid, comm)
	}
	// A running job uses the container: sbuild --rebuild must refuse.
	r := p.run(t, "", "sbuild", "--rebuild", "--skip-checks")
	if r.code != 1 || !strings.Contains(r.stderr, "refusing to rebuild pyxis_sigproj: your job ") {
		t.Errorf("rebuild while busy: exit %d\n%s", r.code, r.stderr)
	}
	// srun forwards the signal to the task, and the task's exit code
	// comes back.
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	got, _ := os.ReadFile(filepath.Join(p.dir, "got"))
	if string(got) != "USR1\n" {
		t.Errorf("the job did not get SIGUSR1 (wait: %v)\n%s", err, errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 43 {
		t.Errorf("srun-wrap exited %d after the signal, want the job's 43\n%s", code, errb.String())
	}
}

func TestSrunWrapInteractiveShell(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "tty")
	os.MkdirAll(filepath.Join(p.data, "pyxis_tty"), 0o755)
	ptmx, pts := pty.Open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := p.cmd(ctx, "srun-wrap")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { out.ReadFrom(ptmx); close(done) }()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// Type the line until the shell runs it and exits: a line typed
	// before srun has set up the job's terminal may be lost, and nothing
	// says when that is done. The shell runs the first line it reads;
	// it prints IS-A-TTY, which the echo of the quoted line does not.
	line := []byte(`[ -t 0 ] && echo IS-A-""TTY; exit 5` + "\n")
	ptmx.Write(line)
	retype := time.NewTicker(2 * time.Second)
	defer retype.Stop()
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-retype.C:
			ptmx.Write(line)
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			t.Fatalf("the shell did not exit in 60 s\n%s", out.String())
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	if code := cmd.ProcessState.ExitCode(); code != 5 {
		t.Errorf("exit %d, want the shell's 5\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "IS-A-TTY") {
		t.Errorf("the shell had no terminal:\n%s", out.String())
	}
	recs := p.c.recordsIn(t, p.dir)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	wantRecord(t, recs[0], map[string]string{"pty": "1", "opt.container-name": "tty", "opt.container-workdir": "/workspace"})
	if got := recs[0].argv(); got != "bash -i" {
		t.Errorf("ran %q, want bash -i", got)
	}
}

func TestSrunWrapBatch(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "batch#1")
	os.MkdirAll(filepath.Join(p.data, "pyxis_batch-1"), 0o755)
	script := "#!/bin/bash\n#SBATCH --job-name=gpusuite-batch-test\n#SBATCH --output=" + p.dir + "/slurm.out\necho \"arg=$1 job=$SLURM_JOB_NAME\" >result.txt\n"
	os.WriteFile(filepath.Join(p.dir, "train job.sh"), []byte(script), 0o644)
	r := p.run(t, "", "srun-wrap", "--batch", "-t", "5", "train job.sh", "a#b c")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Submitted batch job ") {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	result := filepath.Join(p.dir, "result.txt")
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if b, err := os.ReadFile(result); err == nil && len(b) > 0 {
			if string(b) != "arg=a#b c job=gpusuite-batch-test\n" {
				t.Errorf("the job wrote %q", b)
			}
			break
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(p.dir, "slurm.out"))
			t.Fatalf("batch job did not run the script\n%s", out)
		}
	}
	var rec record
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && rec == nil; time.Sleep(100 * time.Millisecond) {
		if recs := p.c.recordsIn(t, p.dir); len(recs) == 1 {
			rec = recs[0]
		}
	}
	if rec == nil {
		t.Fatal("no record of the batch step")
	}
	wantRecord(t, rec, map[string]string{"opt.container-name": "batch-1", "opt.container-mounts": p.dir + ":/workspace", "opt.container-workdir": "/workspace"})
	if got := rec.argv(); got != "/bin/bash ./train job.sh a#b c" {
		t.Errorf("step ran %q", got)
	}
}

func TestSbuildPreflightAgainstRealSrun(t *testing.T) {
	t.Parallel()
	p := newCluster(t).project(t, "checks")
	r := p.run(t, "", "sbuild", "check", "nvcr.io/nvidia/pytorch:24.05-py3")
	if r.code != 1 || !strings.Contains(r.stdout, "error: no enroot credentials") || !strings.Contains(r.stdout, "warning: enroot 3.4.1 would look for") || strings.Contains(r.stdout, "pyxis plugin is not loaded") {
		t.Errorf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = p.run(t, "NGCKEY\n", "sbuild", "login")
	if r.code != 0 {
		t.Fatalf("login: exit %d\n%s", r.code, r.stderr)
	}
	r = p.run(t, "", "sbuild", "check", "nvcr.io/nvidia/pytorch:24.05-py3")
	if r.code != 0 || strings.Contains(r.stdout, "error") {
		t.Errorf("check after login: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Chmod(filepath.Join(p.home, ".config/enroot/.credentials"), 0o644)
	r = p.run(t, "", "sbuild", "nvcr.io/nvidia/pytorch:24.05-py3")
	if r.code != 1 || !strings.Contains(r.stderr, "readable by others") || len(p.c.recordsIn(t, p.dir)) != 0 {
		t.Errorf("exposed credentials: exit %d\n%s", r.code, r.stderr)
	}
}
