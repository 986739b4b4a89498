package main

import (
	"os"
	"testing"

	"github.com/aicloud/gpusuite/internal/cli/containercmd"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

func TestVersionAndBogus(t *testing.T) {
	cmdline.VersionAndBogus(t, "sbuild", func(args []string, stdout, stderr *os.File) int {
		return containercmd.Sbuild(args, containercmd.OSSys(os.Stdin, stdout, stderr, func(string) string { return "" }))
	}, "sbuild: unknown option --bogus (see sbuild --help)\n")
}
