// Command srun-wrap runs a command, or an interactive shell, in the
// project's enroot container: it builds the srun command line and replaces
// itself with srun. See docs/containers.md.
package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
	"github.com/aicloud/gpusuite/internal/container"
)

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

func run(args []string, stdin *os.File, stdout, stderr io.Writer, getenv func(string) string) int {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return containercmd.SrunWrap(args, container.OSSys(stdin, stdout, stderr, getenv, logger))
}
