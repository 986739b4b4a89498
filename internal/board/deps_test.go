package board

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/aicloud/gpusuite/"

// deps are the packages pkg links (go list -deps), by path.
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v: %s", pkg, err, stderr.String())
	}
	got := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		got[strings.TrimPrefix(p, module)] = true
	}
	return got
}

// TestLayers: the board takes notes as plain values and never reads the
// ledger; the writer (ingest and its request queue) never links the board,
// which is a reader's view. An arrow from one to the other would climb
// back up the house.
func TestLayers(t *testing.T) {
	tests := []struct {
		pkg, mustNot string
	}{
		{"internal/board", "internal/store"},
		{"internal/ingest", "internal/board"},
		{"internal/requests", "internal/board"},
		{"internal/live", "internal/board"},
	}
	for _, tc := range tests {
		t.Run(tc.pkg, func(t *testing.T) {
			d := deps(t, tc.pkg)
			if !d[tc.pkg] {
				t.Fatalf("go list -deps %s does not list the package itself: %v", tc.pkg, d)
			}
			if d[tc.mustNot] {
				t.Errorf("%s links %s", tc.pkg, tc.mustNot)
			}
		})
	}
}
