package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProfileBadInput(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no job", []string{"profile"}, 2, "profile takes one JOBID"},
		{"not a job id", []string{"profile", "abc"}, 2, `JOBID "abc" is not a Slurm job id`},
		{"interval off the step", []string{"profile", "42", "--interval", "150ms"}, 2, "--interval 150ms: use at least 100ms, in steps of 100ms"},
		{"shorter than interval", []string{"profile", "42", "--for", "100ms", "--interval", "200ms"}, 2, "--for 100ms is shorter than --interval 200ms"},
		{"no agent", []string{"profile", "42", "--socket", sock}, 1, "is gpuacct agent running on this node"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"gpuacct"}, tt.args...), strings.NewReader(""), &out, &errb, os.Getenv)
			if code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}
