package cliwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/aicloud/gpusuite/"

// pending are internal packages whose command line still awaits its move
// into the binary's folder (none now). The test fails once one no longer
// imports urfave/cli, so the list only shrinks.
var pending = map[string]bool{}

type listed struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// goList runs `go list -json args...` in the module root.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v: %s", args, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// cliLibs is where the command-line libraries live: the one place under
// internal/ that may import urfave/cli, by name.
const cliLibs = "internal/cli/"

// plain are the packages under internal/cli that every program shares and
// that are no command-line library: the version text and the exit codes.
// Any package may import them (the hooks' Exec returns its exit status by
// exitcode's names); TestPlainLinkNoCLI keeps them free of urfave/cli.
var plain = map[string]bool{"internal/cli/buildinfo": true, "internal/cli/exitcode": true}

// TestPlainLinkNoCLI: what plain says of its packages.
func TestPlainLinkNoCLI(t *testing.T) {
	for rel := range plain {
		for _, p := range goList(t, "-deps", module+rel) {
			if strings.HasPrefix(p.ImportPath, "github.com/urfave/cli") {
				t.Errorf("%s links %s: it is a command-line library, not plain", rel, p.ImportPath)
			}
		}
	}
}

// importsCLI: p imports urfave/cli, or a package under internal/cli but
// the plain ones, which is urfave/cli's wiring (those packages themselves
// are not counted: their importers are).
func importsCLI(p listed) bool {
	if strings.HasPrefix(p.ImportPath, module+cliLibs) {
		return false
	}
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, "github.com/urfave/cli") || strings.HasPrefix(imp, module+cliLibs) && !plain[strings.TrimPrefix(imp, module)] {
			return true
		}
	}
	return false
}

// TestImportsCLI: who counts as importing a command-line library.
func TestImportsCLI(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    listed
		want bool
	}{
		{name: "plain", p: listed{ImportPath: module + "internal/report", Imports: []string{"fmt", module + "internal/store"}}},
		{name: "urfave", p: listed{ImportPath: module + "internal/report", Imports: []string{"github.com/urfave/cli/v2"}}, want: true},
		{name: "the wiring", p: listed{ImportPath: module + "internal/web", Imports: []string{module + "internal/cli/cliwire"}}, want: true},
		{name: "a binary", p: listed{ImportPath: module + "sbuild", Imports: []string{module + "internal/cli/containercmd"}}, want: true},
		{name: "internal/cli itself", p: listed{ImportPath: module + "internal/cli/containercmd",
			Imports: []string{"github.com/urfave/cli/v2", module + "internal/cli/cliwire"}}},
		{name: "the exit codes", p: listed{ImportPath: module + "internal/hook", Imports: []string{module + "internal/cli/exitcode", module + "internal/cli/buildinfo"}}},
		{name: "a name like cli's", p: listed{ImportPath: module + "internal/clinic", Imports: []string{"github.com/urfave/cli/v2"}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importsCLI(tc.p); got != tc.want {
				t.Errorf("importsCLI = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLedgerSideLinksNoCLINorNVML: the ledger, the reports and the web
// link neither go-nvml nor urfave/cli (but through a pending package).
func TestLedgerSideLinksNoCLINorNVML(t *testing.T) {
	for _, pkg := range []string{"internal/store", "internal/report", "internal/web"} {
		t.Run(pkg, func(t *testing.T) {
			for _, p := range goList(t, "-deps", module+pkg) {
				if strings.HasPrefix(p.ImportPath, "github.com/NVIDIA/go-nvml") {
					t.Errorf("%s links %s", pkg, p.ImportPath)
				}
				rel := strings.TrimPrefix(p.ImportPath, module)
				if importsCLI(p) && !pending[rel] {
					t.Errorf("%s links urfave/cli through %s", pkg, p.ImportPath)
				}
			}
		})
	}
}

// TestNoInternalPackageImportsCLI: command lines live in the binaries'
// folders and the libraries under internal/cli; the other packages under
// internal/ take plain values.
func TestNoInternalPackageImportsCLI(t *testing.T) {
	var still []string
	for _, p := range goList(t, "./internal/...") {
		rel := strings.TrimPrefix(p.ImportPath, module)
		switch {
		case rel == "internal/testkit/cmdline":
			// The checks of every binary's command line: only tests link
			// it (internal/testkit's deps_test.go holds that).
		case importsCLI(p) && !pending[rel]:
			t.Errorf("%s imports urfave/cli; put its command line in the binary's folder (see internal/cli/cliwire)", rel)
		case importsCLI(p):
			still = append(still, rel)
		}
	}
	sort.Strings(still)
	for rel := range pending {
		if i := sort.SearchStrings(still, rel); i == len(still) || still[i] != rel {
			t.Errorf("%s no longer imports urfave/cli: remove it from pending", rel)
		}
	}
}

// sqlPending are packages that still import database/sql (in code or
// tests), with what holds them there; none may import a driver. The test
// fails once one no longer does, so the list only shrinks (issue 13:
// store alone speaks SQL).
var sqlPending = map[string]string{}

// speaksSQL: p or its tests import database/sql or a SQL driver; driver
// says which.
func speaksSQL(p listed) (sql bool, driver string) {
	imps := append(append(append([]string(nil), p.Imports...), p.TestImports...), p.XTestImports...)
	for _, imp := range imps {
		switch {
		case imp == "database/sql":
			sql = true
		case strings.HasPrefix(imp, "database/sql/driver"), strings.HasPrefix(imp, "github.com/mattn/go-sqlite3"),
			strings.HasPrefix(imp, "modernc.org/sqlite"), strings.HasPrefix(imp, "github.com/jackc/pgx"), strings.HasPrefix(imp, "github.com/lib/pq"):
			driver = imp
		}
	}
	return sql, driver
}

// storeSide: rel is internal/store or its test support
// (internal/testkit/ledgerdb), which may speak SQL.
func storeSide(rel string) bool {
	return rel == "internal/store" || strings.HasPrefix(rel, "internal/store/") || rel == "internal/testkit/ledgerdb"
}

// TestOnlyStoreSpeaksSQL: internal/store (with testkit/ledgerdb) is the one
// package that imports database/sql or a driver, in its code or its tests;
// the others read and write through its methods (docs/architecture.md).
// No package can reach the store's own connection either: it exports no
// *sql.DB and no transaction, so the compiler refuses that.
func TestOnlyStoreSpeaksSQL(t *testing.T) {
	var still []string
	for _, p := range goList(t, "./...") {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if storeSide(rel) {
			continue
		}
		sql, driver := speaksSQL(p)
		_, pend := sqlPending[rel]
		switch {
		case driver != "":
			t.Errorf("%s imports the SQL driver %s; only internal/store may", rel, driver)
		case sql && !pend:
			t.Errorf("%s imports database/sql; read and write through internal/store's methods", rel)
		case sql:
			still = append(still, rel)
		}
	}
	sort.Strings(still)
	for rel := range sqlPending {
		if i := sort.SearchStrings(still, rel); i == len(still) || still[i] != rel {
			t.Errorf("%s no longer imports database/sql: remove it from sqlPending", rel)
		}
	}
}

// TestSpeaksSQL: what counts as speaking SQL, tests included, and who may.
func TestSpeaksSQL(t *testing.T) {
	for _, tc := range []struct {
		name       string
		p          listed
		sql        bool
		driver     string
		storeSided bool
	}{
		{name: "plain", p: listed{ImportPath: module + "internal/report", Imports: []string{"fmt", module + "internal/store"}}},
		{name: "code", p: listed{ImportPath: module + "internal/web", Imports: []string{"database/sql"}}, sql: true},
		{name: "test", p: listed{ImportPath: module + "internal/ingest", TestImports: []string{"database/sql"}}, sql: true},
		{name: "external test driver", p: listed{ImportPath: module + "gpuacct/reportcmd", XTestImports: []string{"github.com/mattn/go-sqlite3"}},
			driver: "github.com/mattn/go-sqlite3"},
		{name: "ledgerdb", p: listed{ImportPath: module + "internal/testkit/ledgerdb", Imports: []string{"database/sql", "github.com/mattn/go-sqlite3"}},
			sql: true, driver: "github.com/mattn/go-sqlite3", storeSided: true},
		{name: "a name like the store's", p: listed{ImportPath: module + "internal/storeish"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sql, driver := speaksSQL(tc.p)
			if sql != tc.sql || driver != tc.driver {
				t.Errorf("speaksSQL = %v, %q; want %v, %q", sql, driver, tc.sql, tc.driver)
			}
			if got := storeSide(strings.TrimPrefix(tc.p.ImportPath, module)); got != tc.storeSided {
				t.Errorf("storeSide = %v, want %v", got, tc.storeSided)
			}
		})
	}
}
