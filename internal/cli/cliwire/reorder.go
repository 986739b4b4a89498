package cliwire

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Reorder puts every option where urfave/cli reads it, so that users may
// type options anywhere on the line (gpuacct status gpu01 --no-slurm,
// gpuacct report teams --config F): urfave/cli reads an app's options
// only before the command and a command's only before its first
// argument, and takes any later one as an argument.
//
// args[0] is the program. Each option goes to the deepest command on the
// line that defines it, else to the app when the app does (--config,
// --version), else to the last command, whose parser then refuses it as
// an unknown option. The command names keep their order, the arguments
// theirs, and everything after "--" stays an argument (the "--" goes
// before the arguments, so that no command sees it). A command that
// parses its own line (SkipFlagParsing) gets its tokens untouched.
func Reorder(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var (
		chain []*cli.Command // the commands named on the line, outermost first
		pos   []string       // the arguments
		rest  []string       // what follows "--"
		dash  bool
		help  bool // --help or -h: the command's help, whatever else
		// An option that needs a value and ends the line, and where it is
		// read (an index of opts): put before the arguments, it would take
		// the first one as its value.
		dangling   string
		danglingAt int
	)
	// opts[0] are the app's options, opts[i+1] chain[i]'s.
	opts := [][]string{nil}
	cmds := app.Commands
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest, dash = args[i+1:], true
			break
		}
		if len(chain) > 0 && chain[len(chain)-1].SkipFlagParsing {
			pos = append(pos, args[i:]...)
			break
		}
		if !isOption(a) {
			if c := lookup(cmds, a); c != nil && len(pos) == 0 {
				chain = append(chain, c)
				opts = append(opts, nil)
				cmds = c.Subcommands
				continue
			}
			pos = append(pos, a)
			continue
		}
		at, f := owner(app, chain, a)
		if f != nil && (f.Names()[0] == "help" || f.Names()[0] == "h") {
			help = true
		}
		if f != nil && !strings.Contains(a, "=") && !isBool(f) && i+1 == len(args) {
			dangling, danglingAt = a, at
			continue
		}
		opts[at] = append(opts[at], a)
		if f != nil && !strings.Contains(a, "=") && !isBool(f) && i+1 < len(args) {
			i++
			opts[at] = append(opts[at], args[i])
		}
	}
	out := append([]string{args[0]}, opts[0]...)
	if dangling != "" && !help {
		// The line ends where the option is read, so that urfave/cli
		// refuses it as missing its value (a usage error) instead of
		// reading the next word as the value.
		for i, c := range chain[:danglingAt] {
			out = append(append(out, c.Name), opts[i+1]...)
		}
		return append(out, dangling)
	}
	for i, c := range chain {
		out = append(append(out, c.Name), opts[i+1]...)
	}
	if help {
		// urfave/cli reads an argument after --help as a help topic.
		return out
	}
	if dash {
		// Before the arguments, where urfave/cli drops it; after one it
		// would stay an argument itself.
		out = append(out, "--")
	}
	return append(append(out, pos...), rest...)
}

// isOption reports whether a is an option: "-" alone is an argument (the
// standard input), a negative number too.
func isOption(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	return !(a[1] >= '0' && a[1] <= '9')
}

func lookup(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// owner is where option a is read: the index in Reorder's opts (0 the
// app, i+1 chain[i]) and its flag, nil when nothing defines it.
func owner(app *cli.App, chain []*cli.Command, a string) (int, cli.Flag) {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	for i := len(chain) - 1; i >= 0; i-- {
		if f := find(chain[i].Flags, name); f != nil {
			return i + 1, f
		}
	}
	if f := find(app.Flags, name); f != nil {
		return 0, f
	}
	if name == "version" && !app.HideVersion {
		return 0, &cli.BoolFlag{Name: "version"}
	}
	if name == "help" || name == "h" {
		return len(chain), &cli.BoolFlag{Name: "help"}
	}
	return len(chain), nil
}

func find(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// isBool reports whether f takes no value: a bool flag, or any flag that
// says so.
func isBool(f cli.Flag) bool {
	if _, ok := f.(*cli.BoolFlag); ok {
		return true
	}
	dv, ok := f.(cli.DocGenerationFlag)
	return ok && !dv.TakesValue()
}
