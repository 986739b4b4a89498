package cliwire

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// bareExit is an exit code written as a number where the policy has a
// name: cli.Exit(msg, 2), ExitError{Code: 1}.
var bareExit = regexp.MustCompile(`\bcli\.Exit\([^\n]*,\s*[0-9]+\s*\)|\bExitError\{\s*Code:\s*[0-9]`)

// TestBareExit: what bareExit finds.
func TestBareExit(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`return cli.Exit("bad", 2)`, true},
		{`return cli.Exit(fmt.Sprintf("%d", n), 1)`, true},
		{`return &cliwire.ExitError{Code: 1}`, true},
		{`return &cliwire.ExitError{Code: cliwire.ExitFailure}`, false},
		{`return cliwire.Usagef("bad %d", 2)`, false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			if got := bareExit.MatchString(tc.line); got != tc.want {
				t.Errorf("bareExit.MatchString(%q) = %v, want %v", tc.line, got, tc.want)
			}
		})
	}
}

// TestNoBareExitCodes: every program's code names its exit codes
// (ExitUsage, ExitFailure, UsageError), so there is one exit policy and
// a reader finds its every use.
func TestNoBareExitCodes(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	const maxFile = 1 << 20 // the longest source file is tens of KiB
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxFile {
			t.Errorf("%s: %d bytes, over the %d this test reads", path, info.Size(), maxFile)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen++
		for i, line := range strings.Split(string(b), "\n") {
			if bareExit.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: exit code as a number: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if seen < 100 {
		t.Fatalf("read %d Go files under %s: is it the module root?", seen, root)
	}
}
