//go:build simulated

package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/demo"
)

// demoCommand is the demo itself: this build links the simulator.
func demoCommand(stdout io.Writer) *cli.Command { return demo.Command(stdout) }
