// Command sbuild builds a project's enroot container once, through srun and
// pyxis, and lists, removes and prunes the user's containers. See
// docs/containers.md.
package main

import (
	"os"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
)

func main() {
	os.Exit(containercmd.Sbuild(os.Args, containercmd.OSSys(os.Stdin, os.Stdout, os.Stderr, os.Getenv)))
}
