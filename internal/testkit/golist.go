package testkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"testing"
)

// Listed is one package as go list -json reports it: its path, its
// package clause ("main" for a binary) and its own code's imports, tests
// aside.
type Listed struct {
	ImportPath string
	Name       string
	Imports    []string
}

// GoList runs go list -json=ImportPath,Name,Imports with args (tags, -deps,
// patterns) and returns its packages, failing the test when go list fails:
// the one decoder of go list's stream of JSON values for the layering
// tests.
func GoList(t testing.TB, args ...string) []Listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Name,Imports"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []Listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		pkgs = append(pkgs, p)
	}
}
