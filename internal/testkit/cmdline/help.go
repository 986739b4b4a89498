package cmdline

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
)

// Command is one command of an app, the app itself first.
type Command struct {
	Path  []string // "gpuacct", "report", "teams"
	Cmd   *cli.Command
	Flags []cli.Flag
	// Text is what --help prints besides the flags: usage, usage text,
	// description.
	Text string
}

// Name is the command as a user types it: "gpuacct report teams".
func (c Command) Name() string { return strings.Join(c.Path, " ") }

// Commands lists app and every command under it (help commands aside).
func Commands(app *cli.App) []Command {
	out := []Command{{Path: []string{app.Name}, Flags: app.Flags,
		Text: strings.Join([]string{app.Usage, app.UsageText, app.ArgsUsage, app.Description}, "\n\n")}}
	var walk func(parent []string, cmds []*cli.Command)
	walk = func(parent []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue
			}
			path := append(append([]string(nil), parent...), c.Name)
			out = append(out, Command{Path: path, Cmd: c, Flags: c.Flags,
				Text: strings.Join([]string{c.Usage, c.UsageText, c.ArgsUsage, c.Description}, "\n\n")})
			walk(path, c.Subcommands)
		}
	}
	walk([]string{app.Name}, app.Commands)
	return out
}

var (
	defaultWord = regexp.MustCompile(`(?i)\bdefault\b`)
	// printedDefault is urfave's own "(default: VALUE)": its VALUE may be
	// the word itself (agent.metrics' set "default").
	printedDefault = regexp.MustCompile(`\(default: [^)]*\)`)
)

// CheckDefaults checks every flag's --help line: a flag whose usage names a
// configuration key ("(agent.interval)") prints that key's built-in default
// (none when it is empty), and no line says "default" twice, as a usage
// that spells one out beside urfave's own "(default: 0)" would.
func CheckDefaults(t *testing.T, app *cli.App) {
	t.Helper()
	defaults := cliwire.ConfigDefaultTexts()
	for _, c := range Commands(app) {
		for _, f := range c.Flags {
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			name := c.Name() + " --" + f.Names()[0]
			line := f.String()
			if n := len(defaultWord.FindAllString(printedDefault.ReplaceAllString(line, "(default)"), -1)); n > 1 {
				t.Errorf("%s: %d defaults in one help line: %q", name, n, line)
			}
			key := cliwire.UsageKey(df.GetUsage())
			if key == "" {
				continue
			}
			want, ok := defaults[key]
			if !ok {
				t.Errorf("%s: usage names %q, which is no configuration key", name, key)
				continue
			}
			got := strings.Trim(df.GetDefaultText(), `"`)
			if bf, isBool := f.(*cli.BoolFlag); isBool && bf.DisableDefaultText {
				got = ""
			}
			if got != want {
				t.Errorf("%s: help prints default %q, the configuration's default of %s is %q\n  %s", name, got, key, want, line)
			}
		}
	}
}

// Example is one line of a command's "Examples:" (or "Example:") block.
type Example struct {
	Command string // the command whose help shows it
	Line    string // as printed, comment included
}

// Examples lists the example lines of every command of app.
func Examples(app *cli.App) []Example {
	var out []Example
	for _, c := range Commands(app) {
		for _, l := range exampleLines(c.Text) {
			out = append(out, Example{Command: c.Name(), Line: l})
		}
	}
	return out
}

func exampleLines(text string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		s := strings.TrimSpace(l)
		switch {
		case s == "Examples:" || s == "Example:":
			in = true
		case in && s == "":
			in = false
		case in:
			out = append(out, s)
		}
	}
	return out
}

// CheckNoDoubledName checks that no help text or example of app names the
// program twice in a row ("gpuacct gpuacct ingest"), a path or not.
func CheckNoDoubledName(t *testing.T, app *cli.App) {
	t.Helper()
	twice := regexp.MustCompile(`(^|[\s'"])(\S*/)?` + regexp.QuoteMeta(app.Name) + `\s+(\S*/)?` + regexp.QuoteMeta(app.Name) + `($|\s)`)
	for _, c := range Commands(app) {
		for _, l := range strings.Split(c.Text, "\n") {
			if twice.MatchString(l) {
				t.Errorf("%s: help names the program twice: %q", c.Name(), strings.TrimSpace(l))
			}
		}
	}
}

// Args splits an example line into the arguments of prog, as a shell
// would: quotes, a leading "sudo"; the first command of the line that runs
// prog ("touch f && prog f" runs it second), up to a pipe, redirection or
// comment. ok is false when no command of the line runs prog (a crontab
// line, a curl beside it).
func Args(prog, line string) (args []string, ok bool) {
	_, args, ok = EnvArgs(prog, line)
	return args, ok
}

// EnvArgs is Args with the environment the line sets for prog: its
// leading NAME=value words ("SLURM_JOB_ID=42 prolog"), in order.
func EnvArgs(prog, line string) (env, args []string, ok bool) {
	cmds, err := shellCommands(line)
	if err != nil {
		return nil, nil, false
	}
	for _, words := range cmds {
		if len(words) > 0 && words[0] == "sudo" {
			words = words[1:]
		}
		var env []string
		for len(words) > 0 && assignment.MatchString(words[0]) {
			env, words = append(env, words[0]), words[1:]
		}
		if len(words) > 0 && words[0] == prog {
			return env, words, true
		}
	}
	return nil, nil, false
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

var errQuote = errors.New("unterminated quote")

// shellCommands splits line into its commands ("a && b; c") and each into
// words at unquoted blanks; a pipe's or redirection's rest and a comment
// are left out.
func shellCommands(line string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var cur strings.Builder
	inWord, skip := false, false
	flush := func() {
		if inWord && !skip {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	end := func() {
		flush()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words, skip = nil, false
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '\'' || ch == '"': // the examples quote nothing that needs escapes inside quotes
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				return nil, errQuote
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case ch == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			inWord, i = true, i+1
		case ch == '#' && !inWord:
			end()
			return cmds, nil
		case strings.HasPrefix(line[i:], "&&"), strings.HasPrefix(line[i:], "||"):
			end()
			i++
		case ch == ';':
			end()
		case ch == '|', ch == '<', ch == '>', ch == '&':
			// The rest of this command is another program's or a file.
			flush()
			skip = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	end()
	return cmds, nil
}

// Stub replaces the action of app and of each command under it by one that
// records the command reached and does nothing else, and returns where the
// record goes: after app.Run, the name of the command that ran ("" when
// none did).
func Stub(app *cli.App) *string {
	reached := new(string)
	record := func(name string) cli.ActionFunc {
		return func(*cli.Context) error { *reached = name; return nil }
	}
	app.Action = record(app.Name)
	app.Before, app.After = nil, nil
	var walk func(parent string, cmds []*cli.Command)
	walk = func(parent string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := parent + " " + c.Name
			if c.Action != nil || len(c.Subcommands) == 0 {
				c.Action = record(name)
			}
			c.Before, c.After = nil, nil
			walk(name, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	return reached
}

// CheckExamples runs every example of the app newApp makes, each line
// once (report's examples show under each of its kinds), as a subtest
// named by the line: runEx gets the arguments of the program as Args
// splits them and must run them for real, failing the subtest when the
// example does not do what it shows. A line in marked is not run: it
// needs what a test does not have (a Slurm cluster, GPUs, a service),
// and marked says what, per line. A marked line that runs the program
// still goes through the program's own command line with the actions
// stubbed (it must reach a command without a usage error); a marked line
// no --help shows any more fails, and so does an unmarked line that does
// not run the program (a crontab line, curl).
func CheckExamples(t *testing.T, newApp func() *cli.App, marked map[string]string, runEx func(t *testing.T, ex Example, args []string)) {
	t.Helper()
	seen := map[string]bool{}
	for _, ex := range Examples(newApp()) {
		if seen[ex.Line] {
			continue
		}
		seen[ex.Line] = true
		prog := newApp().Name
		args, ok := Args(prog, ex.Line)
		_, isMarked := marked[ex.Line]
		switch {
		case isMarked && ok:
			checkParses(t, newApp, ex, args)
		case isMarked:
		case !ok:
			t.Errorf("%s: example %q does not run %s: mark it with what it needs", ex.Command, ex.Line, prog)
		default:
			t.Run(ex.Line, func(t *testing.T) { runEx(t, ex, args) })
		}
	}
	for l := range marked {
		if !seen[l] {
			t.Errorf("marked example %q is no longer shown by any --help", l)
		}
	}
}

// checkParses runs args through the command line of the app newApp makes
// with the actions stubbed: they must reach a command without a usage
// error.
func checkParses(t *testing.T, newApp func() *cli.App, ex Example, args []string) {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	cliwire.Prepare(app)
	reached := Stub(app)
	if err := app.Run(args); err != nil {
		if code, msg := cliwire.Code(err); code == exitcode.Usage {
			t.Errorf("%s: example %q is refused: %s", ex.Command, ex.Line, msg)
		}
		return
	}
	if *reached == "" && !strings.Contains(out.String(), "USAGE:") {
		t.Errorf("%s: example %q ran no command", ex.Command, ex.Line)
	}
}
