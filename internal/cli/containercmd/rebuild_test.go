package containercmd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/container"
	"github.com/aicloud/gpusuite/internal/testkit/registry"
)

// TestSbuildRebuildKeepsOld: whatever fails in a rebuild, the container
// the user had is still there, holding the old image, and sbuild says so.
func TestSbuildRebuildKeepsOld(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "setup.sh"), []byte("exit 4\n"), 0o644)
	for _, tc := range []struct {
		name    string
		args    []string
		srun    int    // the build's srun exit code
		srunErr string // what it prints
		busy    bool   // a job starts in the old container during the build
		squeue  string // the user's jobs before the rebuild
		code    int
		want    string
		fresh   bool // pyxis_proj.sbuild-new is left to look into
	}{
		{name: "pull fails", args: []string{"ubuntu:99.99-typo"}, srun: 1, srunErr: "[ERROR] URL https://registry-1.docker.io/v2/library/ubuntu/manifests/99.99-typo returned error code: 404 Not Found\n",
			code: 1, want: "sbuild: creating the new pyxis_proj failed (srun exit 1): the image or tag does not exist; check the name and tag on the registry; the old pyxis_proj is kept\n"},
		{name: "setup fails", args: []string{"--setup", "setup.sh", "ubuntu:24.04"}, srun: 4, code: 4, fresh: true,
			want: "the old pyxis_proj is kept, and the new one is pyxis_proj.sbuild-new so you can look inside (srun-wrap --name proj.sbuild-new)"},
		{name: "another rebuild runs", args: []string{"ubuntu:24.04"}, squeue: "8|gpusuite-container=proj.sbuild-new\n", code: 1, fresh: true,
			want: "sbuild: another sbuild --rebuild of pyxis_proj is running (job 8); wait for it or scancel 8\n"},
		{name: "job starts meanwhile", args: []string{"ubuntu:24.04"}, busy: true, code: 1,
			want: "sbuild: refusing to rebuild pyxis_proj: your job 9 is using it; wait for it or scancel 9 (it started during the build; the old container is kept and the new one removed)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			os.MkdirAll(filepath.Join(data, "pyxis_proj"), 0o755)
			os.WriteFile(filepath.Join(data, "pyxis_proj", "image"), []byte("ubuntu:22.04"), 0o644)
			container.WriteMeta(data, container.Meta{Name: "proj", Image: "ubuntu:22.04", Project: proj, Created: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)})
			// A leftover of an earlier rebuild is replaced, not an obstacle.
			os.MkdirAll(filepath.Join(data, "pyxis_proj.sbuild-new"), 0o755)
			f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
			f.squeue = tc.squeue
			pyxis := pyxisInto(data)
			run := f.sys.Run
			f.sys.Run = func(ctx context.Context, c container.Cmd) (int, error) {
				code, err := run(ctx, c)
				if c.Argv[0] == "srun" && c.Argv[1] != "--help" {
					pyxis(c.Argv)
					c.Stderr.Write([]byte(tc.srunErr))
					if tc.busy {
						f.squeue = "9|gpusuite-container=proj\n"
					}
					return tc.srun, nil
				}
				if c.Argv[0] == "enroot" && c.Argv[1] == "remove" {
					pyxis(c.Argv)
				}
				return code, err
			}
			code := Sbuild(append([]string{"sbuild", "--rebuild"}, tc.args...), f.sys)
			if code != tc.code || !strings.Contains(f.err.String(), tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, f.err.String(), tc.code, tc.want)
			}
			if strings.Contains(f.err.String(), "removing the old") {
				t.Errorf("the old container was removed first:\n%s", f.err.String())
			}
			if img, err := os.ReadFile(filepath.Join(data, "pyxis_proj", "image")); string(img) != "ubuntu:22.04" {
				t.Errorf("pyxis_proj holds %q (%v) after the failed rebuild, want the old ubuntu:22.04", img, err)
			}
			if m, _, _ := container.ReadMeta(data, "proj"); m.Image != "ubuntu:22.04" {
				t.Errorf("metadata of pyxis_proj says %q, want the old image", m.Image)
			}
			if ok, _ := container.Exists(data, "proj.sbuild-new"); ok != tc.fresh {
				t.Errorf("pyxis_proj.sbuild-new left: %v, want %v", ok, tc.fresh)
			}
			if ok, _ := container.Exists(data, "proj.sbuild-old"); ok {
				t.Error("pyxis_proj.sbuild-old left behind")
			}
		})
	}
}

// TestSbuildAsksRegistry: sbuild asks a real registry (TLS, htpasswd)
// before it submits anything, and a registry it cannot reach only warns.
func TestSbuildAsksRegistry(t *testing.T) {
	reg := registry.Start(t)
	reg.Push(t, "ns/img", "1.0")
	down := registry.FreeAddr(t)
	// A registry that takes the connection and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(proj, 0o755)
	for _, tc := range []struct {
		name     string
		args     []string
		password string // "": no credentials file
		exists   bool   // an old pyxis_proj is there (and --rebuild given)
		code     int
		want     string // the only stderr line, or a part of it
		built    bool
	}{
		{name: "good tag", args: []string{reg.Addr + "/ns/img:1.0"}, password: reg.Password, built: true, want: "sbuild: done"},
		{name: "bad tag", args: []string{reg.Addr + "/ns/img:99.99-typo"}, password: reg.Password, code: 1,
			want: "sbuild: tag 99.99-typo not found in " + reg.Addr + "/ns/img\n"},
		{name: "bad tag, rebuild", args: []string{"--rebuild", reg.Addr + "/ns/img:99.99-typo"}, password: reg.Password, exists: true, code: 1,
			want: "sbuild: tag 99.99-typo not found in " + reg.Addr + "/ns/img; pyxis_proj is kept as it was\n"},
		{name: "bad credentials", args: []string{reg.Addr + "#ns/img:1.0"}, password: "expired", code: 1,
			want: "sbuild: " + reg.Addr + " refused your credentials: fix the \"machine 127.0.0.1\" line in "},
		{name: "no credentials", args: []string{reg.Addr + "/ns/img:1.0"}, code: 1,
			want: "sbuild: " + reg.Addr + " refused an anonymous pull of " + reg.Addr + "/ns/img"},
		{name: "registry down", args: []string{down + "/ns/img:1.0"}, built: true,
			want: "warning: cannot reach " + down + " to check " + down + "/ns/img:1.0 ("},
		{name: "registry silent", args: []string{"--registry-timeout", "1s", silent.Addr().String() + "/ns/img:1.0"}, built: true,
			want: "warning: cannot reach " + silent.Addr().String() + " to check " + silent.Addr().String() + "/ns/img:1.0 (no answer in time)"},
		{name: "skip checks", args: []string{"--skip-checks", reg.Addr + "/ns/img:99.99-typo"}, built: true, want: "sbuild: done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
			f.sys.HTTP = reg.Client(0)
			if tc.exists {
				os.MkdirAll(filepath.Join(data, "pyxis_proj"), 0o755)
			}
			if tc.password != "" {
				u, _ := f.sys.User()
				creds := filepath.Join(u.Home, ".config", "enroot", ".credentials")
				os.MkdirAll(filepath.Dir(creds), 0o700)
				os.WriteFile(creds, []byte("machine 127.0.0.1 login "+reg.User+" password "+tc.password+"\n"), 0o600)
			}
			f.onRun = pyxisInto(data)
			code := Sbuild(append([]string{"sbuild"}, tc.args...), f.sys)
			built := false
			for _, r := range f.ran {
				built = built || r[0] == "srun" && r[1] != "--help"
			}
			if code != tc.code || built != tc.built || !strings.Contains(f.err.String(), tc.want) {
				t.Errorf("exit %d, built %v, stderr:\n%s\nwant exit %d, built %v, %q", code, built, f.err.String(), tc.code, tc.built, tc.want)
			}
			// The note on enroot's version is the fake's (it has no enroot).
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(f.err.String()), "\n") {
				if !strings.HasPrefix(l, "note: enroot of unknown version") {
					lines = append(lines, l)
				}
			}
			if !tc.built && len(lines) != 1 {
				t.Errorf("a refusal in more than one line:\n%s", f.err.String())
			}
		})
	}
	t.Run("check", func(t *testing.T) {
		f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": t.TempDir()})
		f.sys.HTTP = reg.Client(0)
		code := Sbuild([]string{"sbuild", "--registry-timeout", "20s", "check", reg.Addr + "/ns/img:2.0"}, f.sys)
		if code != 1 || !strings.Contains(f.out.String(), "error: "+reg.Addr+" refused an anonymous pull") {
			t.Errorf("exit %d:\n%s%s", code, f.out.String(), f.err.String())
		}
	})
}
