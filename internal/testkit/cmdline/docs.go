package cmdline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// The shipped man pages and completions are generated from the command
// definitions by the binaries' tests (go test ./gpuacct/ -update, ...)
// and compared with the committed files, so a changed flag fails until
// they are written again. The generators live here, in a test-only
// package, so that nothing of them is linked into a program.

// Golden compares got with the file at path, or writes it there when
// update is set.
func Golden(t *testing.T, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with go test -run %s -update)", err, t.Name())
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s is stale (-committed +generated); write it again with go test -run %s -update\n%s", path, t.Name(), d)
	}
}

// ManAndCompletions holds the program name's man page and bash and zsh
// completions under packaging (dir: its path from the test's package) to
// app, or writes them with update, and checks that bash completes each
// line of complete to its words.
func ManAndCompletions(t *testing.T, dir, name string, app *cli.App, update bool, complete map[string][]string) {
	t.Helper()
	Golden(t, filepath.Join(dir, "man", name+".1"), Man(t, app), update)
	bash := Bash(app)
	Golden(t, filepath.Join(dir, "completion", "bash", name), bash, update)
	Golden(t, filepath.Join(dir, "completion", "zsh", "_"+name), Zsh(app), update)
	for line, want := range complete {
		if d := cmp.Diff(want, BashComplete(t, bash, name, line)); d != "" {
			t.Errorf("completing %q (-want +got)\n%s", line, d)
		}
	}
}

// Man is app's man page in section 1.
func Man(t *testing.T, app *cli.App) string {
	t.Helper()
	man, err := app.ToManWithSection(1)
	if err != nil {
		t.Fatalf("man page of %s: %v", app.Name, err)
	}
	return man
}

// ManFromHelp is a man page in section 1 of a program whose command line
// is the standard library's flag package (the hooks): its --help text,
// whose first line is "name - what it does", as it prints it.
func ManFromHelp(name, help string) string {
	first, rest, _ := strings.Cut(help, "\n")
	_, what, _ := strings.Cut(first, " - ")
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1\n.SH NAME\n%s \\- %s\n.SH DESCRIPTION\n.nf\n", strings.ToUpper(name), name, roff(what))
	for _, l := range strings.Split(strings.Trim(rest, "\n"), "\n") {
		fmt.Fprintln(&b, roff(l))
	}
	b.WriteString(".fi\n")
	return b.String()
}

// roff escapes a line of text for troff: backslashes, and a leading dot or
// quote that would read as a request.
func roff(l string) string {
	l = strings.ReplaceAll(l, `\`, `\e`)
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		l = `\&` + l
	}
	return l
}

// node is one command for the completions: its path joined by "/", its
// subcommands and its options.
type node struct {
	path   string
	subs   []*cli.Command
	flags  []cli.Flag
	valued []string
}

func nodes(app *cli.App) []node {
	var out []node
	var walk func(path string, subs []*cli.Command, flags []cli.Flag)
	walk = func(path string, subs []*cli.Command, flags []cli.Flag) {
		var visible []*cli.Command
		for _, c := range subs {
			if !c.Hidden && c.Name != "help" {
				visible = append(visible, c)
			}
		}
		n := node{path: path, subs: visible, flags: flags}
		for _, f := range flags {
			if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() {
				for _, name := range f.Names() {
					n.valued = append(n.valued, dash(name))
				}
			}
		}
		out = append(out, n)
		for _, c := range visible {
			walk(path+"/"+c.Name, c.Subcommands, c.Flags)
		}
	}
	walk(app.Name, app.Commands, app.Flags)
	return out
}

func dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func words(n node, withVersion bool) []string {
	var w []string
	for _, c := range n.subs {
		w = append(w, c.Names()...)
	}
	for _, f := range n.flags {
		for _, name := range f.Names() {
			w = append(w, dash(name))
		}
	}
	w = append(w, "--help")
	if withVersion {
		w = append(w, "--version")
	}
	return w
}

// commandCases is the shell case arms that follow the command path: a word
// naming a subcommand of the path so far extends it.
func commandCases(ns []node, arm string) []string {
	var out []string
	for _, n := range ns {
		for _, c := range n.subs {
			names := c.Names()
			sort.Strings(names)
			pats := make([]string, len(names))
			for i, name := range names {
				pats[i] = n.path + "/" + name
			}
			out = append(out, fmt.Sprintf(arm, strings.Join(pats, "|"), n.path+"/"+c.Name))
		}
	}
	return out
}

// Bash is a static bash completion for app: subcommands and options by
// command, files after an option that takes a value and where nothing
// else fits. Static, so completing never runs the program.
func Bash(app *cli.App) string {
	ns := nodes(app)
	fn := "_gpusuite_" + strings.ReplaceAll(app.Name, "-", "_")
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s, generated from its command definitions\n", app.Name)
	fmt.Fprintf(&b, "# by its tests (go test -update); do not edit.\n")
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	fmt.Fprintf(&b, "    local cmd=%s i\n", app.Name)
	b.WriteString("    for ((i = 1; i < COMP_CWORD; i++)); do\n")
	b.WriteString("        [[ ${COMP_WORDS[i]} == -- ]] && return 0\n")
	b.WriteString("        case \"$cmd/${COMP_WORDS[i]}\" in\n")
	for _, c := range commandCases(ns, "            %s) cmd=%s ;;\n") {
		b.WriteString(c)
	}
	b.WriteString("        esac\n    done\n")
	b.WriteString("    local words valued\n    case $cmd in\n")
	for i, n := range ns {
		fmt.Fprintf(&b, "        %s)\n", n.path)
		fmt.Fprintf(&b, "            words=%q\n", strings.Join(words(n, i == 0), " "))
		fmt.Fprintf(&b, "            valued=%q ;;\n", " "+strings.Join(n.valued, " ")+" ")
	}
	b.WriteString("    esac\n")
	b.WriteString("    if [[ $valued == *\" $prev \"* ]]; then\n        COMPREPLY=()\n        return 0\n    fi\n")
	b.WriteString("    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n")
	fmt.Fprintf(&b, "complete -o default -F %s %s\n", fn, app.Name)
	return b.String()
}

// Zsh is a static zsh completion for app, as Bash with each word's
// description.
func Zsh(app *cli.App) string {
	ns := nodes(app)
	fn := "_" + strings.ReplaceAll(app.Name, "-", "_")
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s, generated from its command definitions\n", app.Name, app.Name)
	b.WriteString("# by its tests (go test -update); do not edit.\n")
	fmt.Fprintf(&b, "%s() {\n", fn)
	fmt.Fprintf(&b, "    local cmd=%s i\n", app.Name)
	b.WriteString("    for ((i = 2; i < CURRENT; i++)); do\n")
	b.WriteString("        [[ ${words[i]} == -- ]] && { _normal; return }\n")
	b.WriteString("        case \"$cmd/${words[i]}\" in\n")
	for _, c := range commandCases(ns, "            (%s) cmd=%s ;;\n") {
		b.WriteString(c)
	}
	b.WriteString("        esac\n    done\n")
	b.WriteString("    local -a opts valued\n    case $cmd in\n")
	for i, n := range ns {
		fmt.Fprintf(&b, "        (%s)\n            opts=(\n", n.path)
		for _, c := range n.subs {
			for _, name := range c.Names() {
				fmt.Fprintf(&b, "                %s\n", zshItem(name, c.Usage))
			}
		}
		for _, f := range n.flags {
			usage := ""
			if df, ok := f.(cli.DocGenerationFlag); ok {
				usage = df.GetUsage()
			}
			for _, name := range f.Names() {
				fmt.Fprintf(&b, "                %s\n", zshItem(dash(name), usage))
			}
		}
		b.WriteString("                " + zshItem("--help", "show help") + "\n")
		if i == 0 {
			b.WriteString("                " + zshItem("--version", "print the version and build, then exit") + "\n")
		}
		fmt.Fprintf(&b, "            )\n            valued=(%s) ;;\n", strings.Join(n.valued, " "))
	}
	b.WriteString("    esac\n")
	b.WriteString("    if (( ${valued[(Ie)${words[CURRENT-1]}]} )); then\n        _files\n        return\n    fi\n")
	b.WriteString("    _describe -t commands '" + app.Name + "' opts || _files\n}\n")
	fmt.Fprintf(&b, "%s \"$@\"\n", fn)
	return b.String()
}

// zshItem is one "word:description" of _describe, single-quoted, with the
// word's colons escaped and the description on one line.
func zshItem(word, desc string) string {
	desc = strings.Join(strings.Fields(strings.ReplaceAll(desc, "`", "")), " ")
	item := strings.ReplaceAll(word, ":", `\:`) + ":" + desc
	return "'" + strings.ReplaceAll(item, "'", `'\''`) + "'"
}

// BashComplete is what the bash completion script offers for the words
// of line, the last one being completed ("gpuacct rep"): the script is
// sourced into a real bash, as bash-completion does.
func BashComplete(t *testing.T, script, prog, line string) []string {
	t.Helper()
	words := strings.Fields(line)
	if strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	fn := "_gpusuite_" + strings.ReplaceAll(prog, "-", "_")
	sh := script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + fmt.Sprint(len(words)-1) +
		"\n" + fn + "\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	out, err := exec.Command("bash", "--norc", "--noprofile", "-c", sh).CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", line, err, out)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			got = append(got, l)
		}
	}
	return got
}
