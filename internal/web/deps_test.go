package web_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadModel: the dashboard reads the ledger through one read model,
// report.DB, and never the store's own reads (internal/board's
// TestLayers holds the other arrows of the house). It links the store
// only through report (go list -deps would list it), so this test reads
// the packages web imports itself.
func TestReadModel(t *testing.T) {
	const module = "github.com/aicloud/gpusuite/"
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	for _, pkg := range []string{"internal/web"} {
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+pkg)
			cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list %s: %v: %s", pkg, err, stderr.String())
			}
			imports := strings.Fields(string(out))
			if len(imports) == 0 {
				t.Fatalf("go list %s lists no imports", pkg)
			}
			for _, p := range imports {
				if p == module+"internal/store" || strings.HasPrefix(p, module+"internal/store/") {
					t.Errorf("%s imports %s: read the ledger through report.DB", pkg, p)
				}
			}
		})
	}
}
