package cliwire

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// Interspersed lets options follow positional arguments, as users type
// them (gpuacct job 1234 --json, gpuacct note add gpu01 --until 4h):
// urfave/cli stops at the first argument, so the rest is parsed again
// with the command's flags, and action gets a context whose Args are the
// positional arguments alone. On a line that went through Run, Reorder
// has already put every option first; what is left here is a "--" after
// an argument, which urfave/cli keeps as an argument and this drops.
func Interspersed(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		args := c.Args().Slice()
		var flags, pos []string
		dashes := false
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "--" {
				pos, dashes = append(pos, args[i+1:]...), true
				break
			}
			if strings.HasPrefix(a, "-") && a != "-" {
				flags = append(flags, primary(c.Command, a))
				if !strings.Contains(a, "=") && takesValue(c.Command, a) {
					if i+1 == len(args) {
						return Usagef("option %s needs a value (see '%s --help')", a, commandPath(c))
					}
					flags = append(flags, args[i+1])
					i++
				}
				continue
			}
			pos = append(pos, a)
		}
		if len(flags) == 0 && !dashes {
			return action(c)
		}
		set := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
		set.SetOutput(io.Discard)
		for _, f := range c.Command.Flags {
			if err := f.Apply(set); err != nil {
				return err
			}
		}
		// The options given before the arguments, then the ones after.
		var all []string
		for _, f := range c.Command.Flags {
			name := f.Names()[0]
			if !c.IsSet(name) {
				continue
			}
			switch f.(type) {
			case *cli.BoolFlag:
				all = append(all, fmt.Sprintf("--%s=%t", name, c.Bool(name)))
			case *cli.StringSliceFlag:
				for _, v := range c.StringSlice(name) {
					all = append(all, "--"+name+"="+v)
				}
			default:
				all = append(all, "--"+name+"="+fmt.Sprint(c.Value(name)))
			}
		}
		all = append(append(append(all, flags...), "--"), pos...)
		if err := set.Parse(all); err != nil {
			return UsageLine(commandPath(c), err)
		}
		nc := cli.NewContext(c.App, set, c.Lineage()[1])
		nc.Command = c.Command
		nc.Context = c.Context
		return action(nc)
	}
}

// commandPath is what the user typed before the options: "gpuacct note
// add".
func commandPath(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" {
			names = append([]string{l.Command.Name}, names...)
		}
	}
	if len(names) == 0 || names[0] != c.App.Name {
		names = append([]string{c.App.Name}, names...)
	}
	return strings.Join(names, " ")
}

// takesValue reports whether arg (no "=VALUE") names a flag of cmd that
// reads the next word as its value, as Reorder judges it.
func takesValue(cmd *cli.Command, arg string) bool {
	f := find(cmd.Flags, strings.TrimLeft(arg, "-"))
	return f != nil && !isBool(f)
}

// primary spells -o VALUE / -o=VALUE with the flag's first name, which
// is the one urfave/cli reads (aliases are separate flag.Values).
func primary(cmd *cli.Command, arg string) string {
	name, val, hasVal := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	f := find(cmd.Flags, name)
	if f == nil {
		return arg
	}
	out := "--" + f.Names()[0]
	if hasVal {
		out += "=" + val
	}
	return out
}

// SetStrings overrides what the config file gave with each string flag
// the user set (flag > env > file > default): names maps a flag to the
// config field it sets.
func SetStrings(c *cli.Context, names map[string]*string) {
	for name, dst := range names {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
}
