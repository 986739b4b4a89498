package main

import (
	"os"
	"testing"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

func TestVersionAndBogus(t *testing.T) {
	cmdline.VersionAndBogus(t, "srun-wrap", func(args []string, stdout, stderr *os.File) int {
		return containercmd.SrunWrap(args, containercmd.OSSys(os.Stdin, stdout, stderr, func(string) string { return "" }))
	}, "srun-wrap: unknown option --bogus: it is neither a srun-wrap option nor an srun option (see srun-wrap --help and srun --help)\n")
}
