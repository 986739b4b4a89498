//go:build simulated

package main

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/demo"
)

// demoCommand is the demo itself: this build links the simulator. Its
// serve logs warnings to the process's stderr and reads the process's
// environment.
func demoCommand(stdout io.Writer) *cli.Command { return demo.Command(stdout, os.Stderr, os.Getenv) }
