package main

import (
	"bytes"
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
		{"version", []string{"--version"}, 0, "srun-wrap, version ", ""},
		// Exits alike with gpuacct --bogus: usage, one line.
		{"unknown option", []string{"--bogus"}, 2, "", "srun-wrap: unknown option --bogus: it is neither a srun-wrap option nor an srun option (see srun-wrap --help and srun --help)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"srun-wrap"}, tt.args...), os.Stdin, &out, &errb, func(string) string { return "" })
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errb.String())
			}
			if !strings.HasPrefix(out.String(), tt.wantOut) {
				t.Errorf("stdout %q, want prefix %q", out.String(), tt.wantOut)
			}
			if errb.String() != tt.wantErr {
				t.Errorf("stderr %q, want %q", errb.String(), tt.wantErr)
			}
		})
	}
}
