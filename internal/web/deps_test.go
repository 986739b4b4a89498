package web_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadModel: the dashboard reads the ledger through one read model,
// report.Ledger, and never the store's own reads (internal/board's
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
					t.Errorf("%s imports %s: read the ledger through report.Ledger", pkg, p)
				}
			}
		})
	}
}

// TestNoStoreHatch: report.Ledger hands the store to nobody. A method or
// function of report that returned the *store.Ledger (DB.Store once did)
// would let the web read the ledger beside the read model while its
// imports stay clean, which TestReadModel cannot see.
func TestNoStoreHatch(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "report", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("report's files: %v (%d)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			for _, r := range fn.Type.Results.List {
				if s, ok := r.Type.(*ast.StarExpr); ok {
					if sel, ok := s.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "store" {
							t.Errorf("%s: %s returns *store.Ledger: read the ledger through report.Ledger's own methods", fset.Position(fn.Pos()), fn.Name.Name)
						}
					}
				}
			}
		}
	}
}
