// Command gpuacct is gpusuite's GPU accounting: the node agent, the
// ingest daemon, and the reports. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
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
	env := Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}
	app := &cli.App{
		Name:  "gpuacct",
		Usage: "GPU accounting for a Slurm cluster: node agent, ingest daemon, reports",
		UsageText: `gpuacct [--config FILE] COMMAND [options]

Examples:
   gpuacct demo                        # the whole pipeline on simulated data
   gpuacct agent                       # on every GPU server (systemd unit gpuacct-agent)
   gpuacct serve                       # on one head server (systemd unit gpuacct-serve)
   gpuacct report teams --start 2026-11-01 --period month`,
		Flags:           []cli.Flag{config.Flag()},
		Commands:        commands(env),
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w (see 'gpuacct --help')", err)
		},
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			return fmt.Errorf("unknown command %q (see 'gpuacct --help' for the commands)", c.Args().First())
		}
		_ = cli.ShowAppHelp(c)
		return cli.Exit("", 2)
	}
	oneLineUsageErrors(app.Commands, "")
	if err := app.Run(args); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(stderr, "gpuacct: %s\n", msg)
		}
		if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() != 0 {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}

// oneLineUsageErrors makes a bad flag on any subcommand one line that points
// at --help, instead of the whole help text.
// at --help, instead of the whole help text. parent is the command path
// above cmds ("report " for report's sub-reports), so the hint names the
// command a user can type.
func oneLineUsageErrors(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		path := parent + c.Name
		if c.OnUsageError == nil {
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
				return fmt.Errorf("%s: %w (see 'gpuacct %s --help')", path, err, path)
			}
		}
		oneLineUsageErrors(c.Subcommands, path+" ")
	}
}
