package testkit

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/aicloud/gpusuite/"

// pkg is one package of the module as its non-test code sees it.
type pkg struct {
	name    string // the package clause: "main" for a binary
	imports []string
}

// linking returns the packages whose non-test code links a testkit package
// (directly or through another such package), sorted.
func linking(pkgs map[string]pkg) []string {
	in := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for path, p := range pkgs {
			if in[path] {
				continue
			}
			for _, imp := range p.imports {
				if in[imp] || imp == module+"internal/testkit" || strings.HasPrefix(imp, module+"internal/testkit/") {
					in[path], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for path := range in {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

func TestLinking(t *testing.T) {
	kit := module + "internal/testkit/ledgerdb"
	for _, tc := range []struct {
		name string
		pkgs map[string]pkg
		want []string
	}{
		{name: "none", pkgs: map[string]pkg{"a": {imports: []string{"fmt"}}}},
		{name: "direct", pkgs: map[string]pkg{"a": {imports: []string{kit}}, "b": {imports: []string{"a2"}}}, want: []string{"a"}},
		{name: "the kit's own package", pkgs: map[string]pkg{"a": {imports: []string{module + "internal/testkit"}}}, want: []string{"a"}},
		{name: "a name like the kit's", pkgs: map[string]pkg{"a": {imports: []string{module + "internal/testkitten"}}}},
		{name: "through a fixture", pkgs: map[string]pkg{
			"fixture": {imports: []string{kit}},
			"cmd":     {name: "main", imports: []string{"lib"}},
			"lib":     {imports: []string{"fixture"}},
		}, want: []string{"cmd", "fixture", "lib"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, linking(tc.pkgs)); diff != "" {
				t.Errorf("linking (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOnlyTestsLinkTestkit: no binary, in either build, links a testkit
// package, not even through the non-test code that may import one (the
// fixtures and the harnesses under test/, which only tests import).
func TestOnlyTestsLinkTestkit(t *testing.T) {
	for _, tags := range []string{"", "simulated"} {
		t.Run("tags="+tags, func(t *testing.T) {
			pkgs := map[string]pkg{}
			for _, p := range GoList(t, "-tags", tags, module+"...") {
				pkgs[p.ImportPath] = pkg{name: p.Name, imports: p.Imports}
			}
			if _, ok := pkgs[module+"gpuacct"]; !ok {
				t.Fatalf("go list ./... lists no gpuacct: %d packages", len(pkgs))
			}
			for _, path := range linking(pkgs) {
				if pkgs[path].name == "main" {
					t.Errorf("the binary %s links a testkit package", strings.TrimPrefix(path, module))
				}
			}
		})
	}
}
