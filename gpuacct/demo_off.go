//go:build !simulated

package main

import (
	"errors"
	"io"

	"github.com/urfave/cli/v2"
)

// demoNotBuilt is what a production gpuacct says to `gpuacct demo`.
const demoNotBuilt = "this gpuacct is built without the simulated GPUs the demo runs on; " +
	"run `make demo` in the source tree (it runs bin/simulated/gpuacct demo)"

// demoCommand stands in for the demo in production builds, which link no
// simulator (the demo runs on simulated GPUs and clusters).
func demoCommand(io.Writer, io.Writer, func(string) string) *cli.Command {
	return &cli.Command{
		Name:            "demo",
		Usage:           "run the suite's main job on built-in simulated data (simulated builds: make demo)",
		UsageText:       "make demo    # in the source tree: bin/simulated/gpuacct demo",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			if a := c.Args().First(); a == "--help" || a == "-h" {
				return cli.ShowSubcommandHelp(c)
			}
			return errors.New(demoNotBuilt) // a failure: exit 1
		},
	}
}
