package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/config"
)

func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown command", []string{"bogus"}, 2, `unknown command "bogus"`},
		{"unknown flag on subcommand", []string{"agent", "--bogus"}, 2, "gpuacct: unknown option --bogus (see 'gpuacct agent --help')"},
		{"unknown flag on a sub-report", []string{"report", "teams", "--bogus"}, 2, "see 'gpuacct report teams --help'"},
		{"unknown flag after an argument", []string{"job", "1234", "--bogus"}, 2, "see 'gpuacct job --help'"},
		// Exits alike with sbuild --bogus (sbuild/main_test.go).
		{"unknown global flag", []string{"--bogus", "demo"}, 2, "gpuacct: unknown option --bogus (see 'gpuacct --help')"},
		{"not a number", []string{"report", "teams", "--limit", "many"}, 2, "invalid value \"many\""},
		{"no command", nil, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"gpuacct"}, tt.args...), strings.NewReader(""), &out, &errb, os.Getenv)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, errb.String())
			}
			if tt.wantErr != "" {
				if !strings.Contains(errb.String(), tt.wantErr) {
					t.Errorf("stderr %q lacks %q", errb.String(), tt.wantErr)
				}
				if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n != 0 {
					t.Errorf("error is %d lines, want one: %q", n+1, errb.String())
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"gpuacct", "--version"}, strings.NewReader(""), &out, &errb, os.Getenv); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "gpuacct, version ") || !strings.Contains(out.String(), "go version:") {
		t.Errorf("--version printed %q", out.String())
	}
}

// TestHelpDefaults: an --interval's help shows the default that applies
// (the config's), not the flag's zero.
func TestHelpDefaults(t *testing.T) {
	def := config.Default()
	for _, tt := range []struct{ cmd, want string }{
		{"agent", "(default: " + def.Agent.Interval.Duration.String() + ")"},
		{"serve", "(default: " + def.Ingest.Interval.Duration.String() + ")"},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{"gpuacct", tt.cmd, "--help"}, strings.NewReader(""), &out, &errb, os.Getenv); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), "(default: 0s)") {
				t.Errorf("%s --help: want %q and no 0s default:\n%s", tt.cmd, tt.want, out.String())
			}
		})
	}
}
