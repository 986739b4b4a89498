// Package cmdline holds the command-line checks every gpusuite binary's
// tests share. It is for tests only.
//
// Files: cmdline.go (running a main, --version and bad input), help.go
// (every command of an app, help defaults and examples), docs.go (man pages
// and completions against their golden files), overlay.go (flags over the
// config file).
package cmdline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run runs a binary's main with args (args[0] the binary's name), writing
// to stdout and stderr, and returns its exit code. Files, not buffers, so
// that mains which need an *os.File (a terminal check) take them too.
type Run func(args []string, stdout, stderr *os.File) int

// VersionAndBogus checks that name --version prints "name, version ..." and
// exits 0, and that name --bogus exits with the usage code 2 and writes
// exactly wantBogus (one line) to stderr, as gpuacct --bogus does.
func VersionAndBogus(t *testing.T, name string, run Run, wantBogus string) {
	t.Helper()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"version", []string{"--version"}, 0, name + ", version ", ""},
		{"unknown option", []string{"--bogus"}, 2, "", wantBogus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			stdout, err := os.Create(filepath.Join(dir, "stdout"))
			if err != nil {
				t.Fatal(err)
			}
			stderr, err := os.Create(filepath.Join(dir, "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			code := run(append([]string{name}, tt.args...), stdout, stderr)
			stdout.Close()
			stderr.Close()
			out, err := os.ReadFile(stdout.Name())
			if err != nil {
				t.Fatal(err)
			}
			errb, err := os.ReadFile(stderr.Name())
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errb)
			}
			if !strings.HasPrefix(string(out), tt.wantOut) {
				t.Errorf("stdout %q, want prefix %q", out, tt.wantOut)
			}
			if string(errb) != tt.wantErr {
				t.Errorf("stderr %q, want %q", errb, tt.wantErr)
			}
		})
	}
}
