package cliwire

import (
	"os"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
)

// keyInError finds the configuration key internal/config's checks name:
// `key "ingest.interval": 0s is under 100ms`.
var keyInError = regexp.MustCompile(`^key "([a-z_.]+)": (.*)$`)

// Validate checks cfg once c's flags are applied to it. config.Load has
// checked the file already, so a value found wrong now came from a flag
// (or its environment variable): the message names the option the user
// typed, not the key of a file they never wrote, and it is a usage error
// (exit 2).
func Validate(c *cli.Context, cfg *config.Config) error {
	return FlagError(c, cfg.Validate())
}

// FlagError turns a configuration error about a key into a usage error
// naming the flag of c's command that set it, when one did; any other
// error is returned as it is.
func FlagError(c *cli.Context, err error) error {
	if err == nil {
		return nil
	}
	m := keyInError.FindStringSubmatch(err.Error())
	if m == nil || c.Command == nil {
		return err
	}
	for _, f := range c.Command.Flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok || UsageKey(df.GetUsage()) != m[1] {
			continue
		}
		if name := f.Names()[0]; c.IsSet(name) {
			return Usagef("%s: %s (see '%s --help')", optionOrEnv(f), m[2], commandPath(c))
		}
	}
	return err
}

// NoArgs wraps the action of a command that takes no arguments: urfave/cli
// would hand them to it unread (gpuacct serve x1 served), so a stray one is
// a usage error (exit 2).
func NoArgs(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.Args().Present() {
			return Usagef("unexpected argument %q: %s takes none (see '%s --help')", c.Args().First(), commandPath(c), commandPath(c))
		}
		return action(c)
	}
}

// optionOrEnv names flag f as the user may have given it: urfave/cli
// tells no option typed from its environment variable, so one set in the
// environment is named beside the option.
func optionOrEnv(f cli.Flag) string {
	name := "--" + f.Names()[0]
	if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
		for _, e := range ev.GetEnvVars() {
			// urfave/cli read the process's environment: so does this.
			if v, set := os.LookupEnv(e); set && v != "" {
				return name + " or $" + e
			}
		}
	}
	return name
}
