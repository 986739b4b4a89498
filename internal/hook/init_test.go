package hook

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every prolog pays for package initialisation before main: no package on
// the hook's path may compile a regexp (or call anything else of package
// regexp) in a package-level variable.
func TestNothingCompiledAtInit(t *testing.T) {
	dirs := []string{".", "../slurm", "../config", "../record", "../spool", "../logging", "../boundcmd", "../agentproto", "../cli/hookcli", "../cli/buildinfo", "../cli/exitcode"}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				ast.Inspect(gd, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "regexp" && sel.Sel.Name != "Regexp" {
							t.Errorf("%s: package-level regexp.%s runs at every hook's start", fset.Position(sel.Pos()), sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
}
