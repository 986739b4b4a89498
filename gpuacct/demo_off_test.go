//go:build !simulated

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDemoNotBuilt: a production gpuacct links no simulator, and its
// demo says in one line how to run the demo instead.
func TestDemoNotBuilt(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"gpuacct", "demo", "--weeks", "1"}, strings.NewReader(""), &out, &errb, os.Getenv)
	if code != 1 || !strings.Contains(errb.String(), "make demo") || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
		t.Errorf("exit %d, stderr %q: want 1 and one line naming make demo", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"gpuacct", "demo", "--help"}, strings.NewReader(""), &out, &errb, os.Getenv); code != 0 || !strings.Contains(out.String(), "make demo") {
		t.Errorf("demo --help: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	for _, tags := range []string{"", "simulated"} {
		deps, err := exec.Command("go", "list", "-tags", tags, "-deps", "github.com/aicloud/gpusuite/gpuacct").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, deps)
		}
		linked := strings.Contains(string(deps), "github.com/aicloud/gpusuite/internal/sim\n")
		if linked != (tags == "simulated") {
			t.Errorf("tags %q: simulator linked %v", tags, linked)
		}
	}
}
