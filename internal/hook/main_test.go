package hook

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
)

// writeConfig writes a hook config whose spool is dir.
func writeConfig(t *testing.T, spool string, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpusuite.toml")
	body := fmt.Sprintf("[spool]\ndir = %q\n[hooks]\ntimeout = \"1s\"\nnvml_timeout = \"100ms\"\n[gpu]\nbackend = \"simulated\"\n%s", spool, extra)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mountTmpfs mounts a small tmpfs (root only) to make a spool full or
// read-only for real.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root to mount a tmpfs; run make test as root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "gpusuite-test", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestMainBadInput(t *testing.T) {
	spoolDir := filepath.Join(t.TempDir(), "spool")
	good := writeConfig(t, spoolDir, "")
	broken := filepath.Join(t.TempDir(), "broken.toml")
	os.WriteFile(broken, []byte("[hooks]\ntimeout = 1s\n"), 0o644)

	ro := mountTmpfs(t, "size=1m,mode=0700")
	os.Mkdir(filepath.Join(ro, "spool"), 0o700)
	if out, err := exec.Command("mount", "-o", "remount,ro", ro).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v: %s", err, out)
	}
	full := mountTmpfs(t, "size=8k,mode=0700")
	os.Mkdir(filepath.Join(full, "spool"), 0o700)
	os.WriteFile(filepath.Join(full, "filler"), bytes.Repeat([]byte("x"), 8192), 0o600)

	tests := []struct {
		name      string
		kind      record.Kind
		opts      Options
		env       func(string) string
		wantCode  int
		wantLog   []string
		wantSpool string // a spool dir that must hold one event
	}{
		{name: "missing config records with defaults", opts: Options{Config: "/nonexistent.toml", SpoolDir: spoolDir + "-2", SpoolDirSet: true}, env: envWith(),
			wantLog: []string{"config unusable", "nonexistent.toml", "job=42"}, wantSpool: spoolDir + "-2"},
		{name: "broken config", opts: Options{Config: broken, SpoolDir: spoolDir + "-3", SpoolDirSet: true}, env: envWith(),
			wantLog: []string{"config unusable", "line 2"}, wantSpool: spoolDir + "-3"},
		{name: "garbage job id", opts: Options{Config: good}, env: envWith("SLURM_JOB_ID", "abc"), wantLog: []string{"accounting failed", "SLURM_JOB_ID"}},
		{name: "read-only spool", opts: Options{Config: good, SpoolDir: filepath.Join(ro, "spool"), SpoolDirSet: true}, env: envWith(),
			wantLog: []string{"accounting failed", "job=42", "read-only file system", `\"key\":\"testcl/42/0/gpu01/job_start\"`}},
		{name: "full spool", opts: Options{Config: good, SpoolDir: filepath.Join(full, "spool"), SpoolDirSet: true}, env: envWith(),
			wantLog: []string{"accounting failed", "no space left"}},
		{name: "epilog records end", kind: record.JobEnd, opts: Options{Config: writeConfig(t, spoolDir+"-5", "")}, env: envWith(), wantSpool: spoolDir + "-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = record.JobStart
			}
			var stderr bytes.Buffer
			code := Exec(kind, tt.opts, &stderr, tt.env)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, stderr.String())
				}
			}
			if tt.wantSpool != "" {
				if n := len(readEvents(t, tt.wantSpool)); n != 1 {
					t.Errorf("%d events in %s, want 1", n, tt.wantSpool)
				}
			}
		})
	}
}

// A config the agent would refuse must not move the hook's spool: the keys
// the hook needs are still taken from it, and a file that cannot be read
// (a named pipe) costs neither the job's time nor the event.
func TestMainBrokenConfigKeepsSpool(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := fmt.Sprintf("[cluster]\nname = \"cfgcl\"\n[spool]\ndir = %q\n[gpu]\nbackend = \"simulated\"\n[hooks]\ntimeout = \"1s\"\nnvml_timeout = \"100ms\"\n", spool)
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, config, spoolFlag string
		wantCluster             string
		wantLog                 []string
	}{
		{name: "unknown key", config: file("unknown.toml", good+"timout = \"3s\"\n"), wantCluster: "cfgcl",
			wantLog: []string{"config unusable", `unknown key \"hooks.timout\"`, "spool=" + spool, "taken_from_file=spool.dir,cluster.name,hooks.timeout,hooks.nvml_timeout,gpu.backend"}},
		{name: "BOM", config: file("bom.toml", "\xEF\xBB\xBF"+good), wantCluster: "cfgcl"},
		{name: "bad value", config: file("value.toml", good+"log_level = \"loud\"\n"), wantCluster: "cfgcl",
			wantLog: []string{"config unusable", `\"hooks.log_level\"`, "spool=" + spool}},
		{name: "absurd timeout", config: file("long.toml", strings.Replace(good, `timeout = "1s"`, `timeout = "100000h"`, 1)), wantCluster: "cfgcl",
			wantLog: []string{"config unusable", `\"hooks.timeout\"`, "spool=" + spool}},
		{name: "syntax error", config: file("syntax.toml", good+"health_check = yes\n"), wantCluster: "cfgcl",
			wantLog: []string{"config unusable", "line 10", "spool=" + spool}},
		{name: "relative spool flag", config: file("good.toml", good), spoolFlag: "relative/spool", wantCluster: "cfgcl",
			wantLog: []string{"not an absolute path", "using=" + spool}},
		{name: "named pipe", config: fifo, spoolFlag: spool, wantCluster: config.Default().Cluster.Name,
			wantLog: []string{"config unusable", "named pipe", "spool=" + spool}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(spool)
			opts := Options{Config: tt.config, SpoolDir: tt.spoolFlag, SpoolDirSet: tt.spoolFlag != ""}
			var stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- Exec(record.JobEnd, opts, &stderr, envWith("SLURM_CLUSTER_NAME", "")) }()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("exit %d", code)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("hook did not return")
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, stderr.String())
				}
			}
			evs := readEvents(t, spool)
			if len(evs) != 1 {
				t.Fatalf("%d events in %s, want 1\n%s", len(evs), spool, stderr.String())
			}
			if evs[0].Cluster != tt.wantCluster {
				t.Errorf("cluster %q, want %q", evs[0].Cluster, tt.wantCluster)
			}
		})
	}
}

// A driver that hangs must not hold the job: the whole hook stays within
// hooks.timeout and still records the minors.
func TestMainTimeBound(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	cfg := writeConfig(t, spool, "[gpu.simulated]\nhang = true\n")
	// Slow every call to more than the hook's whole budget.
	os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "nvml_timeout = \"100ms\"", "nvml_timeout = \"10s\"", 1)), 0o644)
	var stderr bytes.Buffer
	t.Setenv(helperEnv, "serve") // the test binary is hook-gpus (direct_test.go)
	start := time.Now()
	code := Exec(record.JobStart, Options{Config: cfg, Helper: os.Args[0]}, &stderr, envWith())
	el := time.Since(start)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	if el > 1200*time.Millisecond {
		t.Errorf("hook took %s with a 1s bound", el)
	}
	evs := readEvents(t, spool)
	if len(evs) != 1 || len(evs[0].GPUs) != 2 || !strings.Contains(strings.Join(evs[0].Quality, " "), "deadline") {
		t.Fatalf("want one event with minors and a deadline flag, got %+v\n%s", evs, stderr.String())
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
