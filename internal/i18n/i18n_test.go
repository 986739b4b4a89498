package i18n

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/language"
)

func newCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAccept(t *testing.T) {
	c := newCatalog(t)
	for _, tc := range []struct {
		header string
		want   language.Tag
	}{
		{"", English},
		{"ja", Japanese},
		{"ja-JP,ja;q=0.9,en-US;q=0.8", Japanese},
		{"en-US,en;q=0.9,ja;q=0.8", English},
		{"ja;q=0.1,en;q=0.9", English},
		{"en;q=0.1,ja;q=0.9", Japanese},
		{"fr-FR,fr;q=0.9", English},
		{"fr,ja;q=0.5", Japanese},
		{"*", English},
		{"ja;q=0", English},
		{"garbage;;q=x", English},
	} {
		t.Run(tc.header, func(t *testing.T) {
			if got := c.Accept(tc.header); got != tc.want {
				t.Errorf("Accept(%q) = %s, want %s", tc.header, got, tc.want)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	c := newCatalog(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want language.Tag
	}{
		{"none", nil, English},
		{"lang ja", map[string]string{"LANG": "ja_JP.UTF-8"}, Japanese},
		{"lang ja eucjp", map[string]string{"LANG": "ja_JP.eucJP"}, Japanese},
		{"lang en", map[string]string{"LANG": "en_US.UTF-8"}, English},
		{"lang C", map[string]string{"LANG": "C.UTF-8"}, English},
		{"lc_all wins", map[string]string{"LC_ALL": "C", "LC_MESSAGES": "ja_JP.UTF-8", "LANG": "ja_JP.UTF-8"}, English},
		{"lc_messages over lang", map[string]string{"LC_MESSAGES": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"}, Japanese},
		{"lc_all ja", map[string]string{"LC_ALL": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"}, Japanese},
		{"modifier", map[string]string{"LANG": "ja_JP.UTF-8@cjknarrow"}, Japanese},
		{"unspoken", map[string]string{"LANG": "de_DE.UTF-8"}, English},
		{"bad", map[string]string{"LANG": "!!"}, English},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Env(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("Env(%v) = %s, want %s", tc.env, got, tc.want)
			}
		})
	}
}

// English is fmt's output byte for byte, whatever the catalogue holds;
// Japanese is the catalogue's, with numbers as Japanese writes them.
func TestPrinter(t *testing.T) {
	c := newCatalog(t)
	en, ja := c.English(), c.Printer(Japanese)
	for _, tc := range []struct {
		name     string
		p        *Printer
		key      string
		args     []any
		want     string
		wantLang string
	}{
		{"en literal", en, "Board", nil, "Board", "en"},
		{"en literal percent", en, "Efficiency %", nil, "Efficiency %", "en"},
		{"en format", en, "Showing the %d newest; all of them:", []any{1234}, "Showing the 1234 newest; all of them:", "en"},
		{"en missing", en, "no such message %d", []any{3}, "no such message 3", "en"},
		{"ja literal", ja, "Board", nil, "ボード", "ja"},
		{"ja format", ja, "Showing the %d newest; all of them:", []any{1234}, "新しい1,234件を表示。すべて:", "ja"},
		{"ja missing", ja, "no such message", nil, "no such message", "ja"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.T(tc.key, tc.args...); got != tc.want {
				t.Errorf("T(%q) = %q, want %q", tc.key, got, tc.want)
			}
			if got := tc.p.Lang(); got != tc.wantLang {
				t.Errorf("Lang() = %q, want %q", got, tc.wantLang)
			}
		})
	}
	for _, tc := range []struct {
		p    *Printer
		n    int
		want string
	}{
		{en, 1, "  1 GPU on n1"}, {en, 2, "  2 GPUs on n1"}, {ja, 1, "  n1 で GPU 1基"}, {ja, 1000, "  n1 で GPU 1,000基"},
	} {
		if got := tc.p.N(tc.n, "  %d GPU on %s", "  %d GPUs on %s", tc.n, "n1"); got != tc.want {
			t.Errorf("%s N(%d) = %q, want %q", tc.p.Lang(), tc.n, got, tc.want)
		}
	}
	if got := c.Printer(language.French).Lang(); got != "en" {
		t.Errorf("an unspoken language's printer speaks %q, want en", got)
	}
}

func TestTime(t *testing.T) {
	c := newCatalog(t)
	at := time.Date(2026, 11, 28, 9, 5, 7, 0, time.UTC)
	for _, tc := range []struct {
		lang   language.Tag
		layout string
		want   string
	}{
		{English, "2006-01-02 15:04:05 MST", "2026-11-28 09:05:07 UTC"},
		{Japanese, "2006-01-02 15:04:05 MST", "2026年11月28日 09:05:07 UTC"},
		{Japanese, "2006-01-02", "2026年11月28日"},
		{Japanese, "15:04", "09:05"},
	} {
		t.Run(tc.lang.String()+" "+tc.layout, func(t *testing.T) {
			if got := c.Printer(tc.lang).Time(at, tc.layout); got != tc.want {
				t.Errorf("Time = %q, want %q", got, tc.want)
			}
		})
	}
}

// verbs are a format's verbs, in order, without argument indexes: a
// translation must take the same arguments as its key.
func verbs(s string) []string {
	re := regexp.MustCompile(`%(?:\[\d+\])?[-+#0]*\d*(?:\.\d+)?[a-zA-Z%]`)
	var out []string
	for _, v := range re.FindAllString(s, -1) {
		if v == "%%" {
			continue
		}
		out = append(out, regexp.MustCompile(`\[\d+\]`).ReplaceAllString(v, ""))
	}
	sort.Strings(out)
	return out
}

// The catalogues hold the same keys, and each translation takes its
// key's arguments.
func TestCataloguesAgree(t *testing.T) {
	c := newCatalog(t)
	en, ja := c.Keys(English), c.Keys(Japanese)
	sort.Strings(en)
	sort.Strings(ja)
	if d := cmp.Diff(en, ja); d != "" {
		t.Errorf("English and Japanese catalogues differ in keys (-en +ja):\n%s", d)
	}
	for _, k := range ja {
		v := japanese()[k]
		if strings.TrimSpace(v) == "" {
			t.Errorf("%q has an empty translation", k)
		}
		if d := cmp.Diff(verbs(k), verbs(v)); d != "" {
			t.Errorf("%q and its translation %q take different arguments (-key +ja):\n%s", k, v, d)
		}
	}
}

// usedKeys walks the project's sources for the keys its call sites use:
// p.T("...") and p.Text("...") in Go, {{T "..."}} and {{TH "..."}} in
// templates, t("...") in scripts.
func usedKeys(t *testing.T, root string) map[string][]string {
	t.Helper()
	tmpl := regexp.MustCompile(`\bTH?\s+("(?:[^"\\]|\\.)*"|` + "`[^`]*`" + `)`)
	js := regexp.MustCompile(`\bt\(("(?:[^"\\]|\\.)*")`)
	used := map[string][]string{}
	add := func(lit, where string) {
		k, err := strconv.Unquote(lit)
		if err != nil {
			t.Errorf("%s: key %s: %v", where, lit, err)
			return
		}
		used[k] = append(used[k], where)
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n != "." && n != ".." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "dist" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			// Text is a common method name: only where i18n is imported
			speaks := false
			for _, im := range f.Imports {
				speaks = speaks || im.Path.Value == `"github.com/aicloud/gpusuite/internal/i18n"`
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				var keys []ast.Expr
				switch {
				case sel.Sel.Name == "T", sel.Sel.Name == "Text" && speaks:
					keys = call.Args[:1]
				case sel.Sel.Name == "N" && len(call.Args) >= 3:
					keys = call.Args[1:3]
				}
				for _, k := range keys {
					if lit, ok := k.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						add(lit.Value, path)
					}
				}
				return true
			})
		case strings.HasSuffix(path, ".html") && strings.Contains(path, "templates"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range tmpl.FindAllStringSubmatch(string(b), -1) {
				add(m[1], path)
			}
		case strings.HasSuffix(path, ".js") && strings.Contains(path, "static"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range js.FindAllStringSubmatch(string(b), -1) {
				add(m[1], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// Every message the project marks is in every catalogue: a string
// added to a template or a command without its translation fails here.
func TestCatalogueComplete(t *testing.T) {
	c := newCatalog(t)
	used := usedKeys(t, filepath.Join("..", ".."))
	if len(used) == 0 {
		t.Fatal("no marked message found: is the walk reading the sources?")
	}
	for _, lang := range c.Languages() {
		var missing []string
		for k, where := range used {
			if !c.Has(lang, k) {
				missing = append(missing, strconv.Quote(k)+" ("+where[0]+")")
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%d messages missing from the %s catalogue:\n%s", len(missing), lang, strings.Join(missing, "\n"))
		}
	}
}

// Padding counts terminal columns: ASCII as fmt pads it, Japanese two
// columns a character.
func TestPad(t *testing.T) {
	for _, tc := range []struct {
		s         string
		w         int
		left, rgt string
	}{
		{"NODE", 8, "NODE    ", "    NODE"},
		{"ノード", 8, "ノード  ", "  ノード"},
		{"平均", 5, "平均 ", " 平均"},
		{"長すぎる見出し", 4, "長すぎる見出し", "長すぎる見出し"},
	} {
		t.Run(tc.s, func(t *testing.T) {
			if got := Left(tc.s, tc.w); got != tc.left {
				t.Errorf("Left(%q, %d) = %q, want %q", tc.s, tc.w, got, tc.left)
			}
			if got := Right(tc.s, tc.w); got != tc.rgt {
				t.Errorf("Right(%q, %d) = %q, want %q", tc.s, tc.w, got, tc.rgt)
			}
			if tc.s == "NODE" && (Left(tc.s, tc.w) != fmt.Sprintf("%-8s", tc.s) || Right(tc.s, tc.w) != fmt.Sprintf("%8s", tc.s)) {
				t.Errorf("ASCII is not padded as fmt pads it")
			}
		})
	}
}
