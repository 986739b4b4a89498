package cliwire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{`return &cliwire.ExitError{Code: exitcode.Failure}`, false},
		{`return cliwire.Usagef("bad %d", 2)`, false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			if got := bareExit.MatchString(tc.line); got != tc.want {
				t.Errorf("bareExit.MatchString(%q) = %v, want %v", tc.line, got, tc.want)
			}
		})
	}
}

// entryPoints are the functions that return a program's exit code.
var entryPoints = map[string]bool{"run": true, "Main": true, "MainContext": true, "Exec": true}

// bareReturns are the lines, in src, of the exit codes written as a
// number: os.Exit(1) anywhere, and "return 2" in an entry point that
// returns an int.
func bareReturns(fset *token.FileSet, name string, src []byte) ([]int, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	isInt := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Kind == token.INT
	}
	var lines []int
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Exit" && len(n.Args) == 1 && isInt(n.Args[0]) {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" {
					lines = append(lines, fset.Position(n.Pos()).Line)
				}
			}
		case *ast.FuncDecl:
			res := n.Type.Results
			if n.Body == nil || !entryPoints[n.Name.Name] || res == nil || len(res.List) != 1 || len(res.List[0].Names) > 1 {
				return true
			}
			if id, ok := res.List[0].Type.(*ast.Ident); !ok || id.Name != "int" {
				return true
			}
			ast.Inspect(n.Body, func(m ast.Node) bool {
				if _, ok := m.(*ast.FuncLit); ok {
					return false // a closure's returns are its own
				}
				if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 && isInt(r.Results[0]) {
					lines = append(lines, fset.Position(r.Pos()).Line)
				}
				return true
			})
		}
		return true
	})
	return lines, nil
}

// TestBareReturns: what bareReturns finds.
func TestBareReturns(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []int
	}{
		{"run returns 2", "package main\nfunc run() int {\n\treturn 2\n}\n", []int{3}},
		{"run returns a name", "package main\nfunc run() int {\n\treturn exitcode.Usage\n}\n", nil},
		{"os.Exit(1)", "package main\nfunc main() {\n\tos.Exit(1)\n}\n", []int{3}},
		{"os.Exit(run())", "package main\nfunc main() { os.Exit(run()) }\n", nil},
		{"not an entry point", "package p\nfunc count() int {\n\treturn 2\n}\n", nil},
		{"a closure in run", "package main\nfunc run() int {\n\tf := func() int { return 3 }\n\treturn f()\n}\n", nil},
		{"Main with an error", "package p\nfunc Main() error {\n\treturn nil\n}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bareReturns(token.NewFileSet(), "x.go", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("bareReturns (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoBareExitCodes: every program's code names its exit codes
// (exitcode's Usage and Failure, UsageError), so there is one exit
// policy and a reader finds its every use.
func TestNoBareExitCodes(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	const maxFile = 1 << 20 // the longest source file is tens of KiB
	seen := 0
	fset := token.NewFileSet()
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
		rel, _ := filepath.Rel(root, path)
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if bareExit.MatchString(line) {
				t.Errorf("%s:%d: exit code as a number: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		bare, err := bareReturns(fset, path, b)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		for _, n := range bare {
			t.Errorf("%s:%d: exit code as a number: %s", rel, n, strings.TrimSpace(lines[n-1]))
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
