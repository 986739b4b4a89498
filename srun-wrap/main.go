// Command srun-wrap runs a command, or an interactive shell, in the
// project's enroot container: it builds the srun command line and replaces
// itself with srun. See docs/containers.md.
package main

import (
	"os"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
)

func main() {
	os.Exit(containercmd.SrunWrap(os.Args, containercmd.OSSys(os.Stdin, os.Stdout, os.Stderr, os.Getenv)))
}
