// Command gpuacct is gpusuite's GPU accounting: the node agent, the
// ingest daemon, and the reports. See README.md.
//
// Files: main.go (the app and its exit policy), commands.go (one line per
// subcommand), agent.go (gpuacct agent's flags), profile.go (gpuacct
// profile), demo_simulated.go and demo_off.go (gpuacct demo in the
// simulated build, and the pointer to make demo in the production one).
package main

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
)

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

// Env is what every gpuacct subcommand takes from the process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return cliwire.Run(newApp(Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}), args)
}

// newApp is gpuacct's command tree; the tests render its help, man page and
// completions from it.
func newApp(env Env) *cli.App {
	app := &cli.App{
		Name:  "gpuacct",
		Usage: "GPU accounting for a Slurm cluster: node agent, ingest daemon, reports",
		UsageText: `gpuacct [--config FILE] COMMAND [options]

Examples:
   gpuacct demo                        # the whole pipeline on simulated data
   gpuacct agent                       # on every GPU server (systemd unit gpuacct-agent)
   gpuacct serve                       # on one head server (systemd unit gpuacct-serve)
   gpuacct report teams --start 2026-11-01 --period month`,
		Flags:     []cli.Flag{cliwire.ConfigFlag()},
		Commands:  commands(env),
		Reader:    env.Stdin,
		Writer:    env.Stdout,
		ErrWriter: env.Stderr,
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			return cliwire.Usagef("unknown command %q (see 'gpuacct --help' for the commands)", c.Args().First())
		}
		_ = cli.ShowAppHelp(c)
		return &cliwire.ExitError{Code: exitcode.Usage}
	}
	return app
}
