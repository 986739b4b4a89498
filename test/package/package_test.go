//go:build packagetest

// Package pkgtest installs the .deb that `make package` built on this
// machine and checks it as an admin would meet it: files, owners and
// modes, the service user, every systemd unit through systemd-analyze
// verify, an upgrade that keeps an edited configuration, a purge that
// leaves the data; and it inspects the .rpm with rpm. It changes the
// machine, so it runs only through `make package-test` (run by `make
// test` after the other tests, as root), never in `go test ./...`: the
// build tag keeps it out. The machine is restored afterwards (purge,
// and the service user removed when the test made it).
//
// GPUSUITE_DIST names the directory holding gpusuite_VERSION_amd64.deb,
// gpusuite-VERSION-1.x86_64.rpm and next/gpusuite_NEXT_amd64.deb (a
// higher version for the upgrade); GPUSUITE_VERSION is VERSION.
package pkgtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const (
	pkg         = "gpusuite"
	serviceUser = "gpuacct"
	conf        = "/etc/gpusuite/gpusuite.toml"
	spool       = "/var/spool/gpusuite"
	stateDir    = "/var/lib/gpusuite"
	dataDir     = "/data/gpusuite"
)

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func installed() (string, bool) {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status} ${Version}", pkg).Output()
	if err != nil || !strings.HasPrefix(string(out), "install ok installed") {
		return "", false
	}
	f := strings.Fields(string(out))
	return f[len(f)-1], true
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// packages finds the built files, or fails saying how to build them.
func packages(t *testing.T) (deb, next, rpm, version string) {
	t.Helper()
	dist, version := os.Getenv("GPUSUITE_DIST"), os.Getenv("GPUSUITE_VERSION")
	if dist == "" || version == "" {
		t.Fatal("GPUSUITE_DIST and GPUSUITE_VERSION are unset: run make package-test")
	}
	deb = filepath.Join(dist, fmt.Sprintf("%s_%s_amd64.deb", pkg, version))
	rpm = filepath.Join(dist, fmt.Sprintf("%s-%s-1.x86_64.rpm", pkg, version))
	nexts, _ := filepath.Glob(filepath.Join(dist, "next", pkg+"_*_amd64.deb"))
	if len(nexts) != 1 {
		t.Fatalf("want one upgrade package in %s/next, found %v: run make package-test", dist, nexts)
	}
	for _, p := range []string{deb, rpm} {
		if !exists(p) {
			t.Fatalf("%s is missing: run make package-test", p)
		}
	}
	return deb, nexts[0], rpm, version
}

// restore puts the machine back as it was found: the package purged, the
// files the test wrote removed, and what it made (the service user, the
// directories) removed again.
func restore(t *testing.T) {
	hadUser := lookupUser() != nil
	var made []string
	for _, d := range []string{stateDir, dataDir, "/data"} {
		if !exists(d) {
			made = append(made, d)
		}
	}
	t.Cleanup(func() {
		if _, ok := installed(); ok {
			if out, err := exec.Command("dpkg", "--purge", pkg).CombinedOutput(); err != nil {
				t.Errorf("dpkg --purge %s: %v\n%s", pkg, err, out)
			}
		}
		for _, p := range []string{filepath.Join(spool, "package-test.json"), filepath.Join(stateDir, "package-test"),
			filepath.Join(dataDir, "package-test")} {
			os.Remove(p)
		}
		os.Remove(spool) // only when empty, as before the install
		for _, d := range made {
			os.Remove(d)
		}
		os.Remove("/etc/gpusuite")
		if !hadUser && lookupUser() != nil {
			if out, err := exec.Command("userdel", serviceUser).CombinedOutput(); err != nil {
				t.Errorf("userdel %s: %v\n%s", serviceUser, err, out)
			}
		}
	})
}

func lookupUser() *user.User {
	u, err := user.Lookup(serviceUser)
	if err != nil {
		return nil
	}
	return u
}

func TestDebInstallUpgradePurge(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the package test installs a package: run it as root (make package-test)")
	}
	deb, next, _, version := packages(t)
	if v, ok := installed(); ok {
		t.Fatalf("%s %s is installed on this machine; the test would replace and purge it", pkg, v)
	}
	if exists(conf) {
		t.Fatalf("%s exists without the package; the test would change it", conf)
	}
	restore(t)

	// Installing must not start or enable a service: the agent, serve and
	// nfs-sync would take the harness's ports, /data and the GPUs.
	ctrl := t.TempDir()
	run(t, "dpkg-deb", "-e", deb, ctrl)
	postinst, err := os.ReadFile(filepath.Join(ctrl, "postinst"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"systemctl start", "systemctl enable", "systemctl restart", "invoke-rc.d", "deb-systemd-invoke"} {
		if bytes.Contains(postinst, []byte(w)) {
			t.Errorf("postinst runs %q: installing must not start services", w)
		}
	}

	run(t, "dpkg", "-i", deb)
	if v, ok := installed(); !ok || v != version {
		t.Fatalf("after dpkg -i: installed %q (%v), want %s", v, ok, version)
	}

	t.Run("files, owners, modes", func(t *testing.T) {
		want := map[string]fs.FileMode{
			"/usr/bin/gpuacct": 0o755, "/usr/bin/nfs-sync": 0o755, "/usr/bin/sbuild": 0o755, "/usr/bin/srun-wrap": 0o755,
			"/usr/libexec/gpusuite/prolog": 0o755, "/usr/libexec/gpusuite/epilog": 0o755, "/usr/libexec/gpusuite/hook-gpus": 0o755,
			conf: 0o644, spool: fs.ModeDir | 0o700,
			"/lib/systemd/system/gpuacct-agent.service": 0o644, "/lib/systemd/system/gpuacct-serve.service": 0o644,
			"/lib/systemd/system/nfs-sync.service":              0o644,
			"/usr/share/gpusuite/slurm.conf.snippet":            0o644,
			"/usr/share/gpusuite/grafana/gpusuite.json":         0o644,
			"/usr/share/gpusuite/prometheus/gpusuite-rules.yml": 0o644,
			"/usr/share/doc/gpusuite/README.md":                 0o644,
			"/usr/share/zsh/vendor-completions/_gpuacct":        0o644,
			"/usr/share/bash-completion/completions/gpuacct":    0o644,
			"/usr/share/bash-completion/completions/nfs-sync":   0o644,
			"/usr/share/bash-completion/completions/sbuild":     0o644,
			"/usr/share/bash-completion/completions/srun-wrap":  0o644,
		}
		for _, b := range []string{"gpuacct", "nfs-sync", "sbuild", "srun-wrap", "prolog", "epilog", "hook-gpus"} {
			want["/usr/share/man/man1/"+b+".1"] = 0o644
		}
		for p, mode := range want {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if fi.Mode() != mode {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode(), mode)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
				t.Errorf("%s: owner %d:%d, want root:root", p, st.Uid, st.Gid)
			}
		}
		if got := run(t, "dpkg-query", "-W", "-f=${Conffiles}", pkg); !strings.Contains(got, conf) {
			t.Errorf("conffiles %q lack %s", got, conf)
		}
		for _, b := range []string{"/usr/bin/gpuacct", "/usr/bin/nfs-sync", "/usr/bin/sbuild", "/usr/bin/srun-wrap",
			"/usr/libexec/gpusuite/prolog", "/usr/libexec/gpusuite/epilog", "/usr/libexec/gpusuite/hook-gpus"} {
			if got := run(t, b, "--version"); !strings.Contains(got, version) {
				t.Errorf("%s --version: %q lacks %s", b, got, version)
			}
		}
		if got := readFile(t, "/usr/share/man/man1/gpuacct.1"); !bytes.Contains(got, []byte(".TH gpuacct 1")) {
			t.Errorf("/usr/share/man/man1/gpuacct.1 is no man page of section 1: %.80q", got)
		}
	})

	t.Run("service user", func(t *testing.T) {
		u := lookupUser()
		if u == nil {
			t.Fatalf("no user %s after install", serviceUser)
		}
		if uid, _ := strconv.Atoi(u.Uid); uid >= 1000 {
			t.Errorf("%s has uid %d: want a system user", serviceUser, uid)
		}
		if got := run(t, "getent", "passwd", serviceUser); !strings.HasSuffix(strings.TrimSpace(got), ":/usr/sbin/nologin") {
			t.Errorf("%s may log in: %q", serviceUser, got)
		}
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		units, _ := filepath.Glob("/lib/systemd/system/*.service")
		n := 0
		for _, u := range units {
			if !strings.HasPrefix(filepath.Base(u), "gpuacct-") && filepath.Base(u) != "nfs-sync.service" {
				continue
			}
			n++
			out, err := exec.Command("systemd-analyze", "verify", u).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
			}
		}
		if n != 3 {
			t.Errorf("verified %d units, want 3", n)
		}
	})

	t.Run("upgrade keeps the edited config", func(t *testing.T) {
		edited := append(readFile(t, conf), []byte("\n# edited on this server\n")...)
		if err := os.WriteFile(conf, edited, 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, "dpkg", "-i", next)
		if v, _ := installed(); v == version {
			t.Fatalf("still %s after the upgrade", v)
		}
		if got := readFile(t, conf); !bytes.Equal(got, edited) {
			t.Errorf("the upgrade replaced the edited %s", conf)
		}
	})

	t.Run("purge leaves the data", func(t *testing.T) {
		data := map[string]string{
			filepath.Join(spool, "package-test.json"): "a record not yet shipped",
			filepath.Join(stateDir, "package-test"):   "agent state",
			filepath.Join(dataDir, "package-test"):    "the ledger",
		}
		for p, body := range data {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		run(t, "dpkg", "--purge", pkg)
		if _, ok := installed(); ok {
			t.Fatal("still installed after dpkg --purge")
		}
		for p, body := range data {
			if got, err := os.ReadFile(p); err != nil || string(got) != body {
				t.Errorf("after purge %s holds %q (%v), want %q", p, got, err, body)
			}
		}
		if exists("/usr/bin/gpuacct") {
			t.Error("/usr/bin/gpuacct is left after purge")
		}
		if exists(conf) {
			t.Errorf("%s is left after purge (a conffile goes with purge)", conf)
		}
	})
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRpm inspects the .rpm without installing it: the same files as the
// .deb (zsh completions where RPM systems read them), their modes, and the
// scriptlet that makes the service user.
func TestRpm(t *testing.T) {
	deb, _, rpm, version := packages(t)
	if got := run(t, "rpm", "-qp", "--queryformat", "%{NAME} %{VERSION}", rpm); got != pkg+" "+version {
		t.Errorf("rpm says %q, want %q", got, pkg+" "+version)
	}
	files := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(run(t, "rpm", "-qlp", rpm)), "\n") {
		files[l] = true
	}
	for _, l := range strings.Split(run(t, "dpkg-deb", "-c", deb), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || strings.HasPrefix(f[0], "d") {
			continue
		}
		p := strings.TrimPrefix(f[5], ".")
		p = strings.Replace(p, "/usr/share/zsh/vendor-completions/", "/usr/share/zsh/site-functions/", 1)
		if !files[p] {
			t.Errorf("the .rpm lacks %s, which the .deb ships", p)
		}
	}
	for _, p := range []string{"/usr/bin/gpuacct", "/usr/share/man/man1/gpuacct.1", "/usr/share/zsh/site-functions/_gpuacct", spool} {
		if !files[p] {
			t.Errorf("the .rpm lacks %s", p)
		}
	}
	modes := run(t, "rpm", "-qlvp", rpm)
	for p, mode := range map[string]string{"/usr/bin/gpuacct": "-rwxr-xr-x", "/usr/libexec/gpusuite/prolog": "-rwxr-xr-x",
		conf: "-rw-r--r--", spool: "drwx------"} {
		found := false
		for _, l := range strings.Split(modes, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[len(f)-1] == p {
				found = true
				if f[0] != mode || f[2] != "root" || f[3] != "root" {
					t.Errorf("rpm: %s is %s %s:%s, want %s root:root", p, f[0], f[2], f[3], mode)
				}
			}
		}
		if !found {
			t.Errorf("rpm -qlvp lists no %s", p)
		}
	}
	if got := run(t, "rpm", "-qp", "--configfiles", rpm); !strings.Contains(got, conf) {
		t.Errorf("rpm config files %q lack %s", got, conf)
	}
	scripts := run(t, "rpm", "-qp", "--scripts", rpm)
	if !strings.Contains(scripts, "postinstall scriptlet") || !strings.Contains(scripts, "useradd --system") {
		t.Errorf("rpm scripts lack the service user's creation:\n%s", scripts)
	}
}
