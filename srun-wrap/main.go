// Command srun-wrap runs a command, or an interactive shell, in the
// project's enroot container: it builds the srun command line and replaces
// itself with srun. See docs/containers.md.
package main

import (
	"io"
	"os"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
)

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

func run(args []string, stdin *os.File, stdout, stderr io.Writer, getenv func(string) string) int {
	return containercmd.SrunWrap(args, containercmd.OSSys(stdin, stdout, stderr, getenv))
}
