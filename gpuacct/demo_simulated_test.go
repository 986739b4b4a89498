//go:build simulated

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestDemoBadInput(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown flag", []string{"demo", "--bogus"}, 2, "gpuacct: unknown option --bogus (see 'gpuacct demo --help')"},
		{"bad demo value", []string{"demo", "--weeks", "0"}, 1, "--weeks"},
		{"not a number", []string{"demo", "--weeks", "many"}, 2, "invalid value \"many\""},
		{"serve without dir", []string{"demo", "serve"}, 2, "gpuacct: demo serve: --dir is required"},
		{"serve not a demo dir", []string{"demo", "serve", "--dir", os.TempDir()}, 1, "gpuacct: demo serve: \"" + os.TempDir() + "\" is not a demo directory (no demo.json): run `gpuacct demo --dir"},
		{"serve env beyond loopback", []string{"demo", "serve", "--dir", os.TempDir()}, 2, "give --listen 0.0.0.0:8080 on the command line to mean it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "serve env beyond loopback" {
				t.Setenv("GPUSUITE_DEMO_LISTEN", "0.0.0.0:8080")
			}
			var out, errb bytes.Buffer
			code := run(append([]string{"gpuacct"}, tt.args...), strings.NewReader(""), &out, &errb, os.Getenv)
			if code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr %q, want %q", code, tt.wantCode, errb.String(), tt.wantErr)
			}
			if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n != 0 {
				t.Errorf("error is %d lines, want one: %q", n+1, errb.String())
			}
		})
	}
}

func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"gpuacct", "demo", "--dir", t.TempDir(), "--weeks", "1", "--nodes", "2"}, strings.NewReader(""), &out, &errb, os.Getenv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, w := range []string{"real gpuacct agent", "equal to the simulation's ground truth", "GPU usage by team, per week", "TOTAL", "$ gpuacct job ", "Plots: ", " demo serve --dir "} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("demo output lacks %q:\n%s", w, out.String())
		}
	}
}
