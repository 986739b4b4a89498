// Command sbuild builds a project's enroot container once, through srun and
// pyxis, and lists, removes and prunes the user's containers. See
// docs/containers.md.
package main

import (
	"io"
	"os"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
)

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

func run(args []string, stdin *os.File, stdout, stderr io.Writer, getenv func(string) string) int {
	return containercmd.Sbuild(args, containercmd.OSSys(stdin, stdout, stderr, getenv))
}
