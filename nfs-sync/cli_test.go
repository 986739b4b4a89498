package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/files"
	"github.com/aicloud/gpusuite/internal/testkit/fusefs"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/loopback"
)

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(append([]string{"nfs-sync"}, args...), &o, &e, envFunc(env))
	return code, o.String(), e.String()
}

// writeConfig is a site configuration file of the test's holding body.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	return files.Write(t, filepath.Join(t.TempDir(), "gpusuite.toml"), body)
}

// TestCLIBadInput: each mistake gives one line on stderr that says what
// is wrong, and a non-zero exit.
func TestCLIBadInput(t *testing.T) {
	dir := t.TempDir()
	noConfig := map[string]string{"GPUSUITE_CONFIG": filepath.Join(dir, "absent.toml")}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"unknown flag", nil, []string{"touch", "--bogus", "x"}, 2, "unknown option --bogus (see nfs-sync touch --help)"},
		{"unknown global flag", nil, []string{"--nope", "touch"}, 2, "unknown option --nope"},
		{"touch without files", nil, []string{"touch"}, 2, "touch needs at least one FILE"},
		{"touch empty path", nil, []string{"touch", ""}, 2, "FILE 1 is empty; give a path"},
		{"touch empty second path", nil, []string{"touch", filepath.Join(dir, "nope"), ""}, 2, "FILE 2 is empty; give a path"},
		{"watch empty dir", nil, []string{"watch", ""}, 2, "DIR 1 is empty; give a path"},
		{"run empty dir", nil, []string{"run", "--dir", "", "--", "true"}, 2, "--dir is empty; give a directory"},
		{"run without command", nil, []string{"run"}, 2, "run needs a command"},
		{"missing config", noConfig, []string{"touch", "x"}, 1, "absent.toml"},
		{"missing config flag", nil, []string{"--config", filepath.Join(dir, "nope.toml"), "touch", "x"}, 1, "nope.toml"},
		{"unknown config key", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nwindw = \"1s\"\n")}, []string{"touch", "x"}, 1, `unknown key "nfssync.windw"`},
		{"bad config window", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nwindow = \"0s\"\n")}, []string{"touch", "x"}, 1, `key "nfssync.window"`},
		{"bad config backend", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nbackend = \"dnotify\"\n")}, []string{"touch", "x"}, 1, `key "nfssync.backend": "dnotify" is not auto, fanotify or inotify`},
		{"bad config glob", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nexclude = [\"[\"]\n")}, []string{"touch", "x"}, 1, `key "nfssync.exclude"`},
		{"bad config dirs", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\ndirs = [\"data\"]\n")}, []string{"touch", "x"}, 1, `"data" is not an absolute path`},
		{"bad config workers", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nworkers = 0\n")}, []string{"touch", "x"}, 1, `key "nfssync.workers"`},
		{"bad window flag", nil, []string{"touch", "--window", "-1s", "x"}, 2, "--window -1s is outside"},
		{"bad backend flag", nil, []string{"watch", "--backend", "poll", dir}, 2, `--backend "poll"`},
		{"bad log level", nil, []string{"--log-level", "loud", "touch", "x"}, 2, `"loud" is not debug, info, warn or error`},
		{"missing file", nil, []string{"touch", filepath.Join(dir, "nope")}, 1, "no such file"},
		{"missing watch dir", nil, []string{"watch", filepath.Join(dir, "nope")}, 2, "does not exist or is not a directory"},
		{"bad exclude flag", nil, []string{"watch", "--exclude", "a//b", dir}, 2, "empty segment"},
		{"missing web config", nil, []string{"watch", "--web-config-file", filepath.Join(dir, "none.yml"), dir}, 1, `web config file "` + filepath.Join(dir, "none.yml") + `" (nfssync.web_config_file, --web-config-file): no such file or directory`},
		{"bad web config", map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nmetrics_listen = \"\"\nweb_config_file = "+strconv.Quote(writeConfig(t, "basic_auth_users:\n  a: plain\n"))+"\n")}, []string{"watch", dir}, 1, "hashedSecret too short"},
		{"calibrate without probe", nil, []string{"calibrate"}, 2, "calibrate needs a PROBE"},
		{"calibrate missing probe", nil, []string{"calibrate", filepath.Join(dir, "nope")}, 1, "create it once"},
		{"run missing command", nil, []string{"run", "--dir", dir, "--", "/nonexistent-cmd"}, 1, `run "/nonexistent-cmd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nmetrics_listen = \"\"\n")}
			for k, v := range tc.env {
				env[k] = v
			}
			code, _, stderr := runCLI(t, env, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if n := strings.Count(stderr, "\n"); n != 1 || !strings.HasPrefix(stderr, "nfs-sync: ") {
				t.Errorf("want one line starting with \"nfs-sync: \", got %q", stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
}

// TestCLIBadEnv: a bad value in a GPUSUITE_* variable (read by the flag
// library from the process environment) is one line too.
func TestCLIBadEnv(t *testing.T) {
	t.Setenv("GPUSUITE_NFSSYNC_WINDOW", "soon")
	code, _, stderr := runCLI(t, map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "")}, "touch", "x")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "GPUSUITE_NFSSYNC_WINDOW") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestCLIHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"touch", "--help"}, {"run", "--help"}, {"watch", "--help"}, {"calibrate", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, _ := runCLI(t, nil, args...)
			if code != 0 || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "nfs-sync ") {
				t.Errorf("exit %d, help without examples:\n%s", code, stdout)
			}
		})
	}
}

func TestCLITouch(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	files.Write(t, p, "x")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	env := map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "")}

	code, stdout, stderr := runCLI(t, env, "touch", "--dry-run", p)
	if code != 0 || !strings.HasPrefix(stdout, "would touch "+p) || stderr != "" {
		t.Errorf("dry run: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !files.Mtime(t, p).Equal(old.Truncate(time.Microsecond)) && !files.Mtime(t, p).Equal(old) {
		t.Errorf("dry run touched the file")
	}
	os.Symlink("f", filepath.Join(dir, "l"))
	code, stdout, stderr = runCLI(t, env, "touch", p, filepath.Join(dir, "l"))
	if code != 0 || !strings.Contains(stdout, "touched "+p) || !strings.Contains(stdout, "left alone "+filepath.Join(dir, "l")) {
		t.Errorf("touch: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !files.Mtime(t, p).After(old) {
		t.Errorf("mtime did not move")
	}
	// A file just written is touched after the window: the command waits.
	files.Write(t, p, "y")
	start := time.Now()
	code, _, stderr = runCLI(t, env, "touch", "--window", "300ms", p)
	if took := time.Since(start); code != 0 || took < 250*time.Millisecond {
		t.Errorf("exit %d after %s (stderr %q), want a wait of about 300ms", code, took, stderr)
	}
}

// TestCLIRun: run passes CMD's exit status on and fixes what CMD wrote.
func TestCLIRun(t *testing.T) {
	a, b := fusefs.TwoClients(t)
	env := map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nbackend = \"inotify\"\n")}
	fusefs.StartOfSecond()
	files.Write(t, a.Path("r"), "AAAA")
	if got := files.Read(t, b.Path("r")); got != "AAAA" {
		t.Fatalf("B reads %q", got)
	}
	code, _, stderr := runCLI(t, env, "run", "--dir", a.Dir, "--", "sh", "-c", "printf BBBB > "+a.Path("r")+"; exit 3")
	if code != 3 {
		t.Errorf("exit %d, want CMD's 3 (stderr %q)", code, stderr)
	}
	if got := files.Read(t, b.Path("r")); got != "BBBB" {
		t.Errorf("B reads %q when run returns, want BBBB", got)
	}
}

// TestCLIWatchSystemd: under systemd, watch says READY=1 once watching,
// pings the watchdog, serves /metrics and stops on cancel.
func TestCLIWatchSystemd(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	addr := loopback.Addr(t)
	// go-systemd reads these from the process environment.
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "300000")
	t.Setenv("WATCHDOG_PID", "")
	env := map[string]string{"NOTIFY_SOCKET": sock,
		"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nbackend = \"inotify\"\nwindow = \"50ms\"\nsettle = \"10ms\"\n")}
	var stderr logs.Buffer
	stop := watch(t, []string{"nfs-sync", "watch", "--metrics-listen", addr, dir}, env, &stderr)
	msgs := make(chan string, 10)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	expect := func(prefix string) {
		t.Helper()
		timeout := time.After(settled)
		for {
			select {
			case m := <-msgs:
				if strings.HasPrefix(m, prefix) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q from the daemon; stderr:\n%s", prefix, stderr.String())
			}
		}
	}
	expect("READY=1")
	expect("WATCHDOG=1")
	files.Write(t, filepath.Join(dir, "f"), "x")
	var body string
	waitFor(t, settled, "no fix on /metrics", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, "nfssync_fixes_total 1")
	})
	for _, want := range []string{"nfssync_events_total 1", "nfssync_fix_delay_seconds_count 1", "nfssync_window_seconds 0.05", "gpusuite_build_info{"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	stop()
	expect("STOPPING=1")
}
