package notecmd

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
)

// withArgs lets options follow the argument, as the usage reads (gpuacct
// note add gpu01 --until 4h ...): urfave/cli stops parsing at the first
// argument, so the options after it are set on the context here and
// action gets the arguments alone.
func withArgs(action func(c *cli.Context, args []string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		in := c.Args().Slice()
		var args []string
		for i := 0; i < len(in); i++ {
			a := in[i]
			if a == "--" {
				args = append(args, in[i+1:]...)
				break
			}
			if !strings.HasPrefix(a, "-") || a == "-" {
				args = append(args, a)
				continue
			}
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			f := lookup(c.Command, name)
			if f == nil {
				return cliwire.Usagef("unknown option %s (see 'gpuacct note %s --help')", a, c.Command.Name)
			}
			if _, isBool := f.(*cli.BoolFlag); isBool && !hasVal {
				val, hasVal = "true", true
			}
			if !hasVal {
				if i+1 == len(in) {
					return cliwire.Usagef("option %s needs a value (see 'gpuacct note %s --help')", a, c.Command.Name)
				}
				i++
				val = in[i]
			}
			if err := c.Set(f.Names()[0], val); err != nil {
				return cliwire.Usagef("option %s: %v (see 'gpuacct note %s --help')", a, err, c.Command.Name)
			}
		}
		return action(c, args)
	}
}

func lookup(cmd *cli.Command, name string) cli.Flag {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}
