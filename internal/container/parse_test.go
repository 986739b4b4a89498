package container

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"myproj", "myproj"},
		{"My Project", "my-project"},
		{"a:b,c/d", "a-b-c-d"},
		{"__x__", "x"},
		{"proj.v2_final", "proj.v2_final"},
		{"研究 2024", "2024"},
		{"研究", ""},
		{"a   b", "a-b"},
		{"-lead-", "lead"},
		{strings.Repeat("a", 80), strings.Repeat("a", 64)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := Sanitize(tc.in); got != tc.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNameFromDir(t *testing.T) {
	if got := NameFromDir("/home/u/My Proj"); got != "my-proj" {
		t.Errorf("got %q", got)
	}
	a, b := NameFromDir("/home/u/研究"), NameFromDir("/home/v/研究")
	if !strings.HasPrefix(a, "p-") || len(a) != 10 || a == b || a != NameFromDir("/home/u/研究") {
		t.Errorf("hash names %q %q: want stable, distinct p-XXXXXXXX", a, b)
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"proj", "proj", ""},
		{"pyxis_proj", "proj", ""},
		{"Proj", "", `use "proj" instead`},
		{"a:create", "", `use "a-create" instead`},
		{"pyxis_", "", "is empty"},
		{"研究", "", "no usable characters"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := CheckName(tc.in)
			if wantErr(t, err, tc.err) {
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in     string
		want   Image
		docker string
		enroot string
		err    string
	}{
		{in: "ubuntu", want: Image{Repo: "ubuntu"}, docker: "ubuntu", enroot: "ubuntu"},
		{in: "ubuntu:22.04", want: Image{Repo: "ubuntu", Tag: "22.04"}, docker: "ubuntu:22.04", enroot: "ubuntu:22.04"},
		{in: "nvcr.io/nvidia/pytorch:24.05-py3", want: Image{Registry: "nvcr.io", Repo: "nvidia/pytorch", Tag: "24.05-py3"},
			docker: "nvcr.io/nvidia/pytorch:24.05-py3", enroot: "nvcr.io#nvidia/pytorch:24.05-py3"},
		{in: "nvcr.io#nvidia/pytorch:24.05-py3", want: Image{Registry: "nvcr.io", Repo: "nvidia/pytorch", Tag: "24.05-py3", HashForm: true},
			docker: "nvcr.io/nvidia/pytorch:24.05-py3", enroot: "nvcr.io#nvidia/pytorch:24.05-py3"},
		{in: "alice@ghcr.io#org/img", want: Image{User: "alice", Registry: "ghcr.io", Repo: "org/img", HashForm: true},
			docker: "ghcr.io/org/img", enroot: "alice@ghcr.io#org/img"},
		{in: "localhost:5000/x/y:1", want: Image{Registry: "localhost:5000", Repo: "x/y", Tag: "1"}, docker: "localhost:5000/x/y:1", enroot: "localhost:5000#x/y:1"},
		{in: "library/ubuntu@" + digest, want: Image{Repo: "library/ubuntu", Digest: digest}, docker: "library/ubuntu@" + digest, enroot: "library/ubuntu@" + digest},
		{in: "/data/img.sqsh", want: Image{Path: "/data/img.sqsh"}, docker: "/data/img.sqsh", enroot: "/data/img.sqsh"},
		{in: "img.sqsh", want: Image{Path: "img.sqsh"}, docker: "img.sqsh", enroot: "img.sqsh"},
		{in: "", err: "empty"},
		{in: "docker://nvcr.io/x", err: "leave out the docker:// prefix"},
		{in: "nvcr.io/Nvidia/x", err: `use "nvidia/x"`},
		{in: "a b", err: "space"},
		{in: "x@sha256:12", err: "64 hex digits"},
		{in: "nvcr.io#a#b", err: "more than one"},
		{in: "nvcr.io/x:", err: "tag after ':'"},
		{in: "nvidia/x#y", err: "registry host"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseImage(tc.in)
			if wantErr(t, err, tc.err) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
			if got.Docker() != tc.docker || got.Enroot() != tc.enroot {
				t.Errorf("Docker() = %q, Enroot() = %q; want %q, %q", got.Docker(), got.Enroot(), tc.docker, tc.enroot)
			}
		})
	}
}

func TestForEnroot(t *testing.T) {
	v3, _ := ParseVersion("3.4.1")
	v4, _ := ParseVersion("4.0.0")
	for _, tc := range []struct {
		ref     string
		v       Version
		want    string
		noteHas string
	}{
		{"nvcr.io/nvidia/pytorch:24.05-py3", v3, "nvcr.io#nvidia/pytorch:24.05-py3", "enroot 3.4.1 would look for"},
		{"nvcr.io/nvidia/pytorch:24.05-py3", Version{}, "nvcr.io#nvidia/pytorch:24.05-py3", "unknown version"},
		{"nvcr.io/nvidia/pytorch:24.05-py3", v4, "nvcr.io/nvidia/pytorch:24.05-py3", ""},
		{"nvcr.io#nvidia/pytorch", v3, "nvcr.io#nvidia/pytorch", ""},
		{"ubuntu:22.04", v3, "ubuntu:22.04", ""},
		{"/x.sqsh", v3, "/x.sqsh", ""},
	} {
		t.Run(tc.ref+"@"+tc.v.String(), func(t *testing.T) {
			img, err := ParseImage(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			got, note := img.ForEnroot(tc.ref, tc.v)
			if got != tc.want || (tc.noteHas == "") != (note == "") || !strings.Contains(note, tc.noteHas) {
				t.Errorf("= %q, %q; want %q, note with %q", got, note, tc.want, tc.noteHas)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"3.4.1\n", "3.4.1"}, {"v4.0", "4.0.0"}, {"enroot 3.5.0-1", "3.5.0"}, {"x", "unknown"}, {"1.2.3.4", "unknown"},
	} {
		v, _ := ParseVersion(tc.in)
		if v.String() != tc.want {
			t.Errorf("ParseVersion(%q) = %s, want %s", tc.in, v, tc.want)
		}
	}
}

func TestParseMount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mount
		err  string
	}{
		{in: "/data:/data", want: Mount{Src: "/data", Dst: "/data"}},
		{in: "/data/ds:/ds:ro", want: Mount{Src: "/data/ds", Dst: "/ds", ReadOnly: true}},
		{in: "/data/ds:/ds:rw", want: Mount{Src: "/data/ds", Dst: "/ds"}},
		{in: "sub/dir:/x/", want: Mount{Src: "/proj/sub/dir", Dst: "/x"}},
		{in: "/a,b:/x", err: "contains ','"},
		{in: "/a:b:/x", err: "flag \"/x\" is not ro or rw"},
		{in: "/a:b:c:/x", err: "contains ':'"},
		{in: "/a", err: "write SRC:DST"},
		{in: "/a:rel", err: "must be an absolute path"},
		{in: ":/x", err: "must not be empty"},
		{in: "~/d:/d", err: "'~' is not expanded"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMount(tc.in, "/proj")
			if wantErr(t, err, tc.err) {
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if err := CheckPath("project directory", "/home/u/a:b"); err == nil || !strings.Contains(err.Error(), `contains ":"`) {
		t.Errorf("CheckPath = %v", err)
	}
}

func TestSplitArgs(t *testing.T) {
	own := map[string]bool{"gpus": true, "mount": true, "dry-run": false, "name": true, "h": false, "help": false}
	for _, tc := range []struct {
		name string
		in   []string
		want Split
		err  string
	}{
		{name: "empty", in: nil, want: Split{}},
		{name: "cmd", in: []string{"python", "-u", "x.py"}, want: Split{Cmd: []string{"python", "-u", "x.py"}}},
		{name: "own and srun", in: []string{"--gpus", "2", "-p", "long", "--time=10", "--dry-run", "-N1", "python", "--gpus", "3"},
			want: Split{Own: []string{"--gpus", "2", "--dry-run"}, Srun: []string{"-p", "long", "--time=10", "-N1"}, Cmd: []string{"python", "--gpus", "3"}}},
		{name: "dashdash", in: []string{"--name=x", "--", "-weird"}, want: Split{Own: []string{"--name=x"}, Cmd: []string{"-weird"}}},
		{name: "srun long with value", in: []string{"--nodelist", "n1", "--exclusive", "--pty", "bash"},
			want: Split{Srun: []string{"--nodelist", "n1", "--exclusive", "--pty"}, Cmd: []string{"bash"}}},
		{name: "short cluster", in: []string{"-lv", "-t", "5", "x"}, want: Split{Srun: []string{"-lv", "-t", "5"}, Cmd: []string{"x"}}},
		{name: "short cluster ending in valued", in: []string{"-lp", "gpu", "x"}, want: Split{Srun: []string{"-lp", "gpu"}, Cmd: []string{"x"}}},
		{name: "unknown long", in: []string{"--bogus", "x"}, err: "unknown option --bogus"},
		{name: "unknown short", in: []string{"-j", "x"}, err: "unknown option -j"},
		{name: "missing value", in: []string{"--partition"}, err: "needs a value"},
		{name: "own missing value", in: []string{"--gpus"}, err: "needs a value"},
		{name: "bool with value", in: []string{"--pty=1"}, err: "takes no value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitArgs(tc.in, own)
			if wantErr(t, err, tc.err) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func TestExpandAndResolvePaths(t *testing.T) {
	u := User{Name: "alice", UID: 1001, GID: 100, Home: "/data/home/alice"}
	env := map[string]string{"XDG_DATA_HOME": "/xdg/data", "SCRATCH": "/scratch"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct{ in, want string }{
		{"/tmp/enroot-data/user-$(id -u)", "/tmp/enroot-data/user-1001"},
		{"${HOME}/.enroot", "/data/home/alice/.enroot"},
		{"$SCRATCH/$USER/enroot", "/scratch/alice/enroot"},
		{"${XDG_CACHE_HOME:-~/.cache}/enroot", "/data/home/alice/.cache/enroot"},
		{"~/x", "/data/home/alice/x"},
		{"/raid/group-$(id -g)", "/raid/group-100"},
		{"cost$", "cost$"},
	} {
		if got := ExpandPath(tc.in, u, getenv); got != tc.want {
			t.Errorf("ExpandPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	conf, err := ParseEnrootConf([]byte("# site\nENROOT_CACHE_PATH /raid/enroot-cache/group-$(id -g)\nENROOT_DATA_PATH\t/tmp/enroot-data/user-$(id -u)\n\nENROOT_SQUASH_OPTIONS -noI -noD\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := ResolvePaths(conf, "", u, getenv)
	want := Paths{Data: "/tmp/enroot-data/user-1001", Cache: "/raid/enroot-cache/group-100", Config: "/data/home/alice/.config/enroot", Runtime: "/run/user/1001/enroot", Temp: "/tmp"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("with enroot.conf (-want +got)\n%s", d)
	}
	env["ENROOT_DATA_PATH"] = "/env/data"
	if got := ResolvePaths(conf, "", u, getenv).Data; got != "/env/data" {
		t.Errorf("environment should win over enroot.conf: %q", got)
	}
	if got := ResolvePaths(conf, "/site/$USER", u, getenv).Data; got != "/site/alice" {
		t.Errorf("container.data_path should win: %q", got)
	}
	delete(env, "ENROOT_DATA_PATH")
	if got := ResolvePaths(nil, "", u, getenv).Data; got != "/xdg/data/enroot" {
		t.Errorf("XDG default: %q", got)
	}
	if _, err := ParseEnrootConf([]byte("DATA_PATH /x\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad enroot.conf: %v", err)
	}
}

func TestCredentials(t *testing.T) {
	good := "machine nvcr.io login $oauthtoken password KEY\nmachine authn.nvidia.com login $oauthtoken password KEY\n"
	notExist := &fs.PathError{Op: "open", Path: "/c", Err: fs.ErrNotExist}
	for _, tc := range []struct {
		name, registry, data string
		mode                 fs.FileMode
		readErr              error
		want                 string // substring of the line; "" = no finding
	}{
		{name: "good", registry: "nvcr.io", data: good, mode: 0o600},
		{name: "one line layout", registry: "nvcr.io", data: "machine nvcr.io\n  login $oauthtoken\n  password K\n# c\nmachine authn.nvidia.com login $oauthtoken password K", mode: 0o600},
		{name: "other registry", registry: "ghcr.io", readErr: notExist},
		{name: "missing", registry: "nvcr.io", readErr: notExist, want: "no enroot credentials at /c for nvcr.io; the pull would fail with 401 Unauthorized; fix: run `sbuild login`"},
		{name: "unreadable", registry: "nvcr.io", readErr: fs.ErrPermission, want: "cannot read enroot credentials /c"},
		{name: "world readable", registry: "nvcr.io", data: good, mode: 0o644, want: "readable by others (mode 0644): your NGC key is exposed; fix: chmod 600 /c"},
		{name: "group readable", registry: "nvcr.io", data: good, mode: 0o640, want: "readable by others"},
		{name: "only nvcr.io", registry: "nvcr.io", data: "machine nvcr.io login $oauthtoken password KEY\n", mode: 0o600, want: `lack a complete "machine authn.nvidia.com login $oauthtoken password KEY" line`},
		{name: "half written", registry: "nvcr.io", data: "machine nvcr.io login $oauthtoken password KEY\nmachine authn.nvidia.com login $oauthtoken\n", mode: 0o600, want: "authn.nvidia.com"},
		{name: "garbage", registry: "nvcr.io", data: "nvcr.io KEY\n", mode: 0o600, want: "malformed"},
		{name: "dangling", registry: "nvcr.io", data: "machine nvcr.io login", mode: 0o600, want: "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := CheckCredentials(tc.registry, "/c", []byte(tc.data), tc.mode, tc.readErr)
			if tc.want == "" {
				if f != nil {
					t.Fatalf("unexpected finding: %s", f.Line())
				}
				return
			}
			if f == nil || f.Level != Fail || !strings.Contains(f.Line(), tc.want) || f.Fix == "" {
				t.Fatalf("finding = %+v, want one containing %q and a fix", f, tc.want)
			}
		})
	}
	merged := MergeNGCCredentials("machine ghcr.io login me password tok\nmachine nvcr.io login $oauthtoken password OLD\n", "NEW")
	want := "machine ghcr.io login me password tok\nmachine nvcr.io login $oauthtoken password NEW\nmachine authn.nvidia.com login $oauthtoken password NEW\n"
	if merged != want {
		t.Errorf("merged:\n%s\nwant:\n%s", merged, want)
	}
	if f := CheckCredentials("nvcr.io", "/c", []byte(merged), 0o600, nil); f != nil {
		t.Errorf("merged file fails the check: %s", f.Line())
	}
}

func TestWriteCredentials(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/enroot/.credentials"
	if err := WriteCredentials(path, "K1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("machine x login a password b\n"+MergeNGCCredentials("", "K1")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteCredentials(path, "K2"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 || !strings.Contains(string(data), "machine x login a password b") || strings.Contains(string(data), "K1") || strings.Count(string(data), "K2") != 2 {
		t.Errorf("mode %v, content:\n%s", fi.Mode(), data)
	}
}

func TestPreflightMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *Finding
		want string // "" = no finding
		lvl  Level
	}{
		{"srun ok", CheckSrun(nil), "", OK},
		{"srun missing", CheckSrun(errors.New("not found")), "srun is not on PATH, so no job can be submitted from here; fix: run this on a head server", Fail},
		{"pyxis ok", CheckPyxis("  --container-image=X\n --container-name --container-mounts --container-workdir --container-writable --container-remap-root --container-save --container-env", nil), "", OK},
		{"pyxis absent", CheckPyxis("Usage: srun [OPTIONS...] executable\n  --container  Path to OCI container bundle\n", nil), "the pyxis plugin is not loaded: `srun --help` lists no --container-image option; fix: ask the administrators", Fail},
		{"pyxis old", CheckPyxis("--container-image --container-name --container-mounts --container-workdir", nil), "too old: `srun --help` lacks --container-writable", Fail},
		{"no slurm.conf", CheckPyxis("srun: fatal: Could not establish a configuration source", errors.New("exit status 1")), "srun cannot read the Slurm configuration", Fail},
		{"srun broken", CheckPyxis("", errors.New("exec format error")), "`srun --help` failed", Fail},
		{"storage ok", CheckStorage("data path", "ENROOT_DATA_PATH", "/d", FSInfo{Avail: 100 << 30}, nil, 20<<30), "", OK},
		{"storage absent", CheckStorage("data path", "ENROOT_DATA_PATH", "/d", FSInfo{}, &fs.PathError{Err: fs.ErrNotExist}, 20<<30), "", OK},
		{"storage full", CheckStorage("data path", "ENROOT_DATA_PATH", "/d", FSInfo{Avail: 3 << 30}, nil, 20<<30), "enroot data path /d has only 3.0 GiB free; an unpacked image needs about 20.0 GiB", Fail},
		{"storage nfs", CheckStorage("cache path", "ENROOT_CACHE_PATH", "/c", FSInfo{Type: NFSMagic, Avail: 100 << 30}, nil, 20<<30), "enroot cache path /c is on NFS", Warn},
		{"storage error", CheckStorage("data path", "ENROOT_DATA_PATH", "/d", FSInfo{}, fs.ErrPermission, 0), "cannot check enroot data path /d", Warn},
		{"scope global", CheckScope("global"), "", OK},
		{"scope job", CheckScope("job"), "container_scope=job", Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.f != nil {
					t.Fatalf("unexpected finding %s", tc.f.Line())
				}
				return
			}
			if tc.f == nil || !strings.Contains(tc.f.Line(), tc.want) || tc.f.Level != tc.lvl {
				t.Fatalf("finding = %+v, want level %v containing %q", tc.f, tc.lvl, tc.want)
			}
			if tc.lvl == Fail && tc.f.Fix == "" {
				t.Errorf("a failing check must say how to fix it: %s", tc.f.Line())
			}
		})
	}
}

func TestQuoteAndDirectives(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain-word_1.2/x:y,z=1", "plain-word_1.2/x:y,z=1"},
		{"", "''"},
		{"a b", "'a b'"},
		{"nvcr.io#x", "'nvcr.io#x'"},
		{"#comment", "'#comment'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	script := "#!/bin/bash\n# train\n#SBATCH --time=10\n\n  #SBATCH -J x  # name\necho hi\n#SBATCH --ignored\n"
	if d := cmp.Diff([]string{"#SBATCH --time=10", "#SBATCH -J x  # name"}, Directives(script)); d != "" {
		t.Errorf("Directives (-want +got)\n%s", d)
	}
}

func TestParseSqueue(t *testing.T) {
	got := ParseSqueue("12|gpusuite-container=proj\n13|(null)\n14|gpusuite-container=proj\n15|gpusuite-container=other\nbad\n")
	want := map[string][]string{"proj": {"12", "14"}, "other": {"15"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func TestCheckTime(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"60", true}, {"0", true}, {"30:00", true}, {"4:00:00", true}, {"2-12", true}, {"2-12:30", true}, {"2-00:00:00", true},
		{"UNLIMITED", true}, {"infinite", true}, {"Unlimited", true},
		{"", false}, {"garbage", false}, {"1h", false}, {"1:2:3:4", false}, {"-5", false}, {"2-", false}, {"-2:00", false},
		{"1-2-3", false}, {"4:00:00 ", false}, {"1.5", false}, {"1234567890", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			err := CheckTime(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckTime(%q) = %v, want ok %v", tc.in, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "write MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED") {
				t.Errorf("error does not name the forms: %v", err)
			}
		})
	}
}

// wantErr fails the test unless err contains want, where want is set,
// and says whether it was: such a case has no value left to check.
func wantErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	return true
}
