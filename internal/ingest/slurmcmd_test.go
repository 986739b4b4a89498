package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlurmCommandBounded: a sacct or sacctmgr that prints without end is
// stopped at maxSlurmOutput and fails, one that fails says why from its
// standard error, and one that works returns its output.
func TestSlurmCommandBounded(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, prog, want, wantErr string
	}{
		{"works", script("ok", `printf '%s\n' "$*"`), "-n -P show assoc\n", ""},
		{"endless output", script("endless", "exec yes account"), "", "printed more than 67108864 bytes"},
		{"fails", script("bad", `echo "sacctmgr: error: Problem talking to the database: Connection refused" >&2; echo second line >&2; exit 1`),
			"", "Problem talking to the database: Connection refused: exit status 1"},
		{"missing", filepath.Join(dir, "no-such-sacct"), "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := slurmCommand(tc.prog)(ctx, "-n", "-P", "show", "assoc")
			if tc.wantErr == "" {
				if err != nil || string(out) != tc.want {
					t.Errorf("= %q, %v; want %q", out, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "second line") {
				t.Errorf("error %v, want one line with %q", err, tc.wantErr)
			}
			if out != nil {
				t.Errorf("output %d bytes on failure, want none", len(out))
			}
		})
	}
}

// TestSlurmCommandForkingWrapper: a wrapper script that runs sacct
// without exec leaves a child holding stdout after the kill; the call
// still ends with its context, not with the child.
func TestSlurmCommandForkingWrapper(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sacct-wrapper")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nsleep 30\necho late\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := slurmCommand(p)(ctx, "-j", "1")
	// Generous: the bound is the context plus WaitDelay (1s), far below
	// the child's 30s; a busy machine must not fail it.
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("returned after %v, want soon after the 200ms timeout", took)
	}
	if err == nil || out != nil {
		t.Errorf("= %q, %v; want no output and an error", out, err)
	}
}
