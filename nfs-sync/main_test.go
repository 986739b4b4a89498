package main

import (
	"os"
	"strings"
	"testing"
)

func TestVersionAndBogus(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"version", []string{"--version"}, 0, "nfs-sync, version ", ""},
		{"unknown option", []string{"--bogus"}, 2, "", "nfs-sync: unknown option --bogus (see nfs-sync --help)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			stdout, err := os.Create(dir + "/stdout")
			if err != nil {
				t.Fatal(err)
			}
			stderr, err := os.Create(dir + "/stderr")
			if err != nil {
				t.Fatal(err)
			}
			code := run(append([]string{"nfs-sync"}, tt.args...), stdout, stderr, func(string) string { return "" })
			stdout.Close()
			stderr.Close()
			out, _ := os.ReadFile(dir + "/stdout")
			errb, _ := os.ReadFile(dir + "/stderr")
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
