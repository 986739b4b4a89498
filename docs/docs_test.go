// Package docs holds no code: its test keeps the documentation in step
// with the tree, so that nothing is left undocumented and no link leads
// nowhere.
package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/config"
)

// maxDoc bounds every page the test reads; the longest is a few tens of KiB.
const maxDoc = 1 << 20

func readDoc(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %q: %v", path, err)
	}
	if fi.Size() > maxDoc {
		t.Fatalf("read %q: %d bytes, over the %d the test reads", path, fi.Size(), maxDoc)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %q: %v", path, err)
	}
	return string(b)
}

// packages lists every folder under root that holds Go files, build-tagged
// ones included: what `go list ./...` shows and what a tag keeps from it.
func packages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %q: %v", root, err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func TestArchitectureNamesEveryPackage(t *testing.T) {
	arch := readDoc(t, "architecture.md")
	pkgs := packages(t, "..")
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages under the repository root: is the test run from docs/?", len(pkgs))
	}
	for _, p := range pkgs {
		t.Run(p, func(t *testing.T) {
			if !strings.Contains(arch, "`"+p+"`") {
				t.Errorf("docs/architecture.md does not name package `%s`: add its line under its layer", p)
			}
		})
	}
}

func TestPackagesFindsBuildTagged(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"a/a.go", "a/b/tagged.go", "a/testdata/x.go", ".hidden/h.go", "c/README.md"} {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("//go:build never\n\npackage x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(packages(t, root), " ")
	if want := "a a/b"; got != want {
		t.Errorf("packages = %q, want %q", got, want)
	}
}

var (
	// mdLink is a Markdown link or image: [text](target) or ![alt](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// docRef is a page or picture named in running text, "docs/store.md".
	docRef = regexp.MustCompile("(?:^|[\\s(`\"])(docs/[A-Za-z0-9._-]+\\.(?:md|png))")
)

// links returns the relative targets a page names, resolved against the
// repository root, with their fragments dropped.
func links(page, text string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		out = append(out, filepath.Join(filepath.Dir(page), target))
	}
	for _, m := range docRef.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestLinksResolve(t *testing.T) {
	pages := []string{"README.md"}
	for _, glob := range []string{"docs/*.md", "bench/results/*.md"} {
		m, err := filepath.Glob(filepath.Join("..", glob))
		if err != nil {
			t.Fatalf("glob %q: %v", glob, err)
		}
		for _, p := range m {
			rel, err := filepath.Rel("..", p)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, rel)
		}
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages: is the test run from docs/?", len(pages))
	}
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			for _, target := range links(page, readDoc(t, filepath.Join("..", page))) {
				if _, err := os.Stat(filepath.Join("..", target)); err != nil {
					t.Errorf("%s links %s, which does not exist", page, target)
				}
			}
		})
	}
}

func TestLinks(t *testing.T) {
	page := "docs/performance.md"
	text := "See [h](../bench/results/x.md#a), ![p](board.png), [w](https://x.org/a.md), [s](#top) and docs/store.md, `docs/api.md`.\n"
	got := strings.Join(links(page, text), " ")
	want := "bench/results/x.md docs/board.png docs/store.md docs/api.md"
	if got != want {
		t.Errorf("links = %q, want %q", got, want)
	}
}

// fileName is a Go file a package comment names: "sample.go", or a
// pattern such as "engine_*.go". One named by path ("prolog/deps_test.go")
// is another package's and is left alone.
var fileName = regexp.MustCompile(`(?:^|[^/A-Za-z0-9_*.])([A-Za-z0-9_*]+\.go)\b`)

// packageDoc returns the doc comment of the package in dir: the first
// file's that has one, as go doc shows it.
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatalf("glob %q: %v", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("parse %q: %v", f, err)
		}
		if af.Doc != nil {
			return af.Doc.Text()
		}
	}
	return ""
}

// TestFileMapsCurrent holds each package comment's file map to the
// package's files: a file renamed or removed must leave the map too.
func TestFileMapsCurrent(t *testing.T) {
	for _, p := range packages(t, "..") {
		t.Run(p, func(t *testing.T) {
			dir := filepath.Join("..", p)
			for _, m := range fileName.FindAllStringSubmatch(packageDoc(t, dir), -1) {
				found, err := filepath.Glob(filepath.Join(dir, m[1]))
				if err != nil {
					t.Fatalf("glob %q: %v", m[1], err)
				}
				if len(found) == 0 {
					t.Errorf("the package comment of %s names %s, which is not in the package", p, m[1])
				}
			}
		})
	}
}

func TestFileNames(t *testing.T) {
	doc := "Files: sample.go (x), engine_*.go, and prolog/deps_test.go; go.mod; see docs/x.go.\n"
	var got []string
	for _, m := range fileName.FindAllStringSubmatch(doc, -1) {
		got = append(got, m[1])
	}
	if want := "sample.go engine_*.go"; strings.Join(got, " ") != want {
		t.Errorf("file names = %q, want %q", strings.Join(got, " "), want)
	}
}

// allDocs is every page a reader may be sent to, README.md included, as
// one text: a thing is documented when any of them names it.
func allDocs(t *testing.T) string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatalf("glob docs: %v", err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	var b strings.Builder
	for _, p := range pages {
		b.WriteString(readDoc(t, p))
		b.WriteByte('\n')
	}
	return b.String()
}

// goSources returns the text of every non-test Go file under root, by
// path, leaving out what no user or admin meets: the tests' harnesses,
// their support packages and the benchmarks.
func goSources(t *testing.T, root string) map[string]string {
	t.Helper()
	skip := map[string]bool{"test": true, "bench": true, "docs": true, "internal/testkit": true}
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if path != root && (skip[rel] || strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		out[rel] = readDoc(t, path)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %q: %v", root, err)
	}
	return out
}

// configKeys returns every key of a section type, dotted below the
// section ("simulated.count"), from its toml tags.
func configKeys(typ reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(config.Duration{}) {
			out = append(out, configKeys(f.Type, prefix+tag+".")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	return out
}

// TestConfigKeysDocumented holds docs/configuration.md to the config
// file's keys: each is named in its section's part of the page.
func TestConfigKeysDocumented(t *testing.T) {
	page := readDoc(t, "configuration.md")
	typ := reflect.TypeOf(config.Config{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		section, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		t.Run(section, func(t *testing.T) {
			_, text, ok := strings.Cut(page, "\n## ["+section+"]\n")
			if !ok {
				t.Fatalf("docs/configuration.md has no section ## [%s]", section)
			}
			text, _, _ = strings.Cut(text, "\n## ")
			keys := configKeys(f.Type, "")
			if len(keys) == 0 {
				t.Fatalf("section %s has no keys: is its type's toml tag read?", section)
			}
			for _, k := range keys {
				if !strings.Contains(text, "`"+k+"`") {
					t.Errorf("docs/configuration.md, [%s], does not name key `%s`", section, k)
				}
			}
		})
	}
}

// metricName is a Prometheus metric the programs serve, as its name
// appears in a string literal.
var metricName = regexp.MustCompile(`"((?:gpusuite|gpuacct|nfssync)_[a-z0-9_]*[a-z0-9])"`)

// TestMetricsDocumented: every metric a program serves on /metrics is
// named in the docs.
func TestMetricsDocumented(t *testing.T) {
	docs := allDocs(t)
	found := map[string]string{}
	for path, src := range goSources(t, "..") {
		for _, m := range metricName.FindAllStringSubmatch(src, -1) {
			found[m[1]] = path
		}
	}
	if len(found) < 40 {
		t.Fatalf("found %d metric names: is the test run from docs/?", len(found))
	}
	for name, path := range found {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(docs) {
			t.Errorf("metric %s (%s) is named in no doc", name, path)
		}
	}
}

var (
	// route is a pattern internal/web registers: "GET /api/v1/jobs".
	route = regexp.MustCompile(`"GET (/[^" ]*)"`)
	// constRoute is a route held in a constant: eventsPath = "/api/...".
	constRoute = regexp.MustCompile(`(?m)^\s*\w+Path\s*=\s*"(/[^"]*)"`)
	// wildcard is a path segment a pattern names: {cluster}, {id}.
	wildcard = regexp.MustCompile(`\\\{[^/]*\}`)
)

// TestRoutesDocumented: every page and API route serve answers is in
// docs/api.md or docs/dashboard.md. A wildcard may be written as the
// pattern writes it ({id}) or in capitals (ID).
func TestRoutesDocumented(t *testing.T) {
	docs := readDoc(t, "api.md") + readDoc(t, "dashboard.md")
	var routes []string
	for path, src := range goSources(t, "..") {
		if !strings.HasPrefix(path, "internal/web/") {
			continue
		}
		for _, re := range []*regexp.Regexp{route, constRoute} {
			for _, m := range re.FindAllStringSubmatch(src, -1) {
				routes = append(routes, m[1])
			}
		}
	}
	if len(routes) < 10 {
		t.Fatalf("found %d routes in internal/web: is the test run from docs/?", len(routes))
	}
	for _, r := range routes {
		r = strings.TrimSuffix(r, "{$}")
		if r == "/" {
			continue // the board page: "/" is everywhere
		}
		pat := wildcard.ReplaceAllString(regexp.QuoteMeta(r), `(?:\{[a-z]+\}|[A-Z]+)`)
		if !regexp.MustCompile("(?m)(?:`|GET )" + pat + "(?:[`?]|$)").MatchString(docs) {
			t.Errorf("route %s is in neither docs/api.md nor docs/dashboard.md", r)
		}
	}
}

// envVar is a GPUSUITE_* variable a program reads.
var envVar = regexp.MustCompile(`"(GPUSUITE_[A-Z0-9_]+)"`)

// TestEnvironmentDocumented: every GPUSUITE_* variable a program reads
// is named in the docs (the tests' own are in internal/testkit and test/).
func TestEnvironmentDocumented(t *testing.T) {
	docs := allDocs(t)
	found := map[string]string{}
	for path, src := range goSources(t, "..") {
		for _, m := range envVar.FindAllStringSubmatch(src, -1) {
			found[m[1]] = path
		}
	}
	if len(found) < 40 {
		t.Fatalf("found %d variables: is the test run from docs/?", len(found))
	}
	for name, path := range found {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(docs) {
			t.Errorf("%s (%s) is named in no doc", name, path)
		}
	}
}

// manCommand is a command or subcommand heading of a man page.
var manCommand = regexp.MustCompile(`(?m)^\.(SH|SS) ([a-z][a-z-]*)$`)

// TestCommandsDocumented: every command of every program's man page is
// named in the docs, as "gpuacct note" or, for a subcommand, "note add"
// or in a synopsis's {a|b} list.
func TestCommandsDocumented(t *testing.T) {
	docs := allDocs(t)
	pages, err := filepath.Glob("../packaging/man/*.1")
	if err != nil || len(pages) < 5 {
		t.Fatalf("man pages: %d found, %v", len(pages), err)
	}
	for _, p := range pages {
		prog := strings.TrimSuffix(filepath.Base(p), ".1")
		_, text, ok := strings.Cut(readDoc(t, p), "\n.SH COMMANDS\n")
		if !ok {
			continue
		}
		parent := ""
		for _, m := range manCommand.FindAllStringSubmatch(text, -1) {
			name := m[2]
			if m[1] == "SH" {
				parent = name
				if !strings.Contains(docs, prog+" "+name) {
					t.Errorf("%s %s is named in no doc", prog, name)
				}
				continue
			}
			sub := regexp.MustCompile(`\b` + parent + ` ` + name + `\b|[{|]` + name + `[|}]`)
			if !sub.MatchString(docs) {
				t.Errorf("%s %s %s is named in no doc", prog, parent, name)
			}
		}
	}
}

// alertRule is an alert the shipped Prometheus rules define.
var alertRule = regexp.MustCompile(`(?m)^\s*-?\s*alert:\s*(\S+)`)

// TestAlertsDocumented: every alert of the shipped rules has its row in
// docs/operations.md, saying what it means and what to do.
func TestAlertsDocumented(t *testing.T) {
	page := readDoc(t, "operations.md")
	alerts := alertRule.FindAllStringSubmatch(readDoc(t, "../packaging/prometheus/gpusuite-rules.yml"), -1)
	if len(alerts) < 5 {
		t.Fatalf("found %d alerts in the shipped rules: is the test run from docs/?", len(alerts))
	}
	for _, m := range alerts {
		if !strings.Contains(page, "| "+m[1]+" (") {
			t.Errorf("alert %s has no row in docs/operations.md", m[1])
		}
	}
}

// repoPath is a file or folder of the repository a page names by path:
// "internal/store/dialect", "test/slurm/harness.sh", "packaging/man/*.1",
// "internal/notify/testdata/digest.{en,ja}.golden".
var repoPath = regexp.MustCompile(`(?:^|[^/\w.-])((?:internal|test|bench|packaging|gpuacct)/[\w./*{},-]*[\w*}])`)

// braces is a shell brace list in a path, "{en,ja}", globbed as "*".
var braces = regexp.MustCompile(`\{[^{}/]*\}`)

// TestPathsExist: a package or file the docs name by path is in the
// tree, so that a move leaves no page pointing at the old place.
func TestPathsExist(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	for _, page := range pages {
		for _, m := range repoPath.FindAllStringSubmatch(readDoc(t, page), -1) {
			found, err := filepath.Glob(filepath.Join("..", braces.ReplaceAllString(m[1], "*")))
			if err != nil {
				t.Fatalf("glob %q: %v", m[1], err)
			}
			if len(found) == 0 {
				t.Errorf("%s names %s, which is not in the tree", page, m[1])
			}
		}
	}
}

// TestFileMapsPresent: a package of three files or more has a file map
// in its doc comment, as docs/architecture.md promises, so a reader finds
// where each part lives without opening every file.
func TestFileMapsPresent(t *testing.T) {
	for _, p := range packages(t, "..") {
		dir := filepath.Join("..", p)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatalf("glob %q: %v", dir, err)
		}
		n := 0
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				n++
			}
		}
		if n < 3 {
			continue
		}
		if !fileName.MatchString(packageDoc(t, dir)) {
			t.Errorf("the package comment of %s (%d files) names none of them: add its file map", p, n)
		}
	}
}

// table is a table a migration creates, in SQLite's spelling.
var table = regexp.MustCompile(`(?i)CREATE TABLE (?:IF NOT EXISTS )?([a-z_0-9]+)`)

// TestTablesDocumented: every table of the ledger is named in the docs
// (docs/store.md's schema, or the page of the feature that owns it), so
// an admin who opens the ledger finds what each table holds.
func TestTablesDocumented(t *testing.T) {
	docs := allDocs(t)
	files, err := filepath.Glob("../internal/store/migrations/sqlite/*.sql")
	if err != nil || len(files) < 5 {
		t.Fatalf("migrations: %d found, %v", len(files), err)
	}
	for _, f := range files {
		for _, m := range table.FindAllStringSubmatch(readDoc(t, f), -1) {
			if !strings.Contains(docs, "`"+m[1]+"`") {
				t.Errorf("table %s (%s) is named in no doc", m[1], filepath.Base(f))
			}
		}
	}
}

// schemaName is the schema of a file the programs write or read.
var schemaName = regexp.MustCompile(`"(gpusuite\.[a-z]+/v[0-9]+)"`)

// TestSchemasDocumented: every file schema a program writes or reads
// (records, requests, the board's documents) is named in the docs.
func TestSchemasDocumented(t *testing.T) {
	docs := allDocs(t)
	found := map[string]string{}
	for path, src := range goSources(t, "..") {
		for _, m := range schemaName.FindAllStringSubmatch(src, -1) {
			found[m[1]] = path
		}
	}
	if len(found) < 8 {
		t.Fatalf("found %d schemas: is the test run from docs/?", len(found))
	}
	for name, path := range found {
		if !strings.Contains(docs, name) {
			t.Errorf("schema %s (%s) is named in no doc", name, path)
		}
	}
}
