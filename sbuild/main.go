// Command sbuild builds a project's enroot container once, through srun and
// pyxis, and lists, removes and prunes the user's containers. See
// docs/containers.md.
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
	return containercmd.Sbuild(args, container.OSSys(stdin, stdout, stderr, getenv, logger))
}
