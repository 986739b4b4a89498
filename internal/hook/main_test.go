package hook

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		args      []string
		env       func(string) string
		wantCode  int
		wantLog   []string
		wantSpool string // a spool dir that must hold one event
		setenv    string // GPUSUITE_SPOOL_DIR
	}{
		{name: "unknown flag", args: []string{"--bogus"}, env: envWith(), wantLog: []string{"flag provided but not defined: -bogus", "nothing recorded"}},
		{name: "missing config records with defaults", args: []string{"--config", "/nonexistent.toml", "--spool-dir", spoolDir + "-2"}, env: envWith(),
			wantLog: []string{"config unusable", "nonexistent.toml", "job=42"}, wantSpool: spoolDir + "-2"},
		{name: "broken config", args: []string{"--config", broken, "--spool-dir", spoolDir + "-3"}, env: envWith(),
			wantLog: []string{"config unusable", "line 2"}, wantSpool: spoolDir + "-3"},
		{name: "garbage job id", args: []string{"--config", good}, env: envWith("SLURM_JOB_ID", "abc"), wantLog: []string{"accounting failed", "SLURM_JOB_ID"}},
		{name: "read-only spool", args: []string{"--config", good, "--spool-dir", filepath.Join(ro, "spool")}, env: envWith(),
			wantLog: []string{"accounting failed", "job=42", "read-only file system", `\"key\":\"testcl/42/0/gpu01/job_start\"`}},
		{name: "full spool", args: []string{"--config", good, "--spool-dir", filepath.Join(full, "spool")}, env: envWith(),
			wantLog: []string{"accounting failed", "no space left"}},
		// flag > env > file: GPUSUITE_SPOOL_DIR beats the file's spool.dir.
		{name: "spool env override", args: []string{"--config", good}, env: envWith(), setenv: spoolDir + "-4", wantSpool: spoolDir + "-4"},
		{name: "epilog records end", kind: record.JobEnd, args: []string{"--config", writeConfig(t, spoolDir+"-5", "")}, env: envWith(), wantSpool: spoolDir + "-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = record.JobStart
			}
			if tt.setenv != "" {
				t.Setenv("GPUSUITE_SPOOL_DIR", tt.setenv)
			}
			var stderr bytes.Buffer
			code := Main(kind, append([]string{"prolog"}, tt.args...), &stderr, tt.env)
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

// A driver that hangs must not hold the job: the whole hook stays within
// hooks.timeout and still records the minors.
func TestMainTimeBound(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	cfg := writeConfig(t, spool, "[gpu.simulated]\nhang = true\n")
	// Slow every call to more than the hook's whole budget.
	os.WriteFile(cfg, []byte(strings.Replace(mustRead(t, cfg), "nvml_timeout = \"100ms\"", "nvml_timeout = \"10s\"", 1)), 0o644)
	var stderr bytes.Buffer
	start := time.Now()
	code := Main(record.JobStart, []string{"prolog", "--config", cfg}, &stderr, envWith())
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
