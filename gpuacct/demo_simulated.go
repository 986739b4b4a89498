//go:build simulated

package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/democmd"
)

// demoCommand is the demo itself: this build links the simulator. Its
// serve logs warnings to the process's stderr and reads the process's
// environment.
func demoCommand(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return democmd.Command(stdout, stderr, getenv)
}
