package main

import (
	"os"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

func TestVersionAndBogus(t *testing.T) {
	cmdline.VersionAndBogus(t, "nfs-sync", func(args []string, stdout, stderr *os.File) int {
		return run(args, stdout, stderr, func(string) string { return "" })
	}, "nfs-sync: unknown option --bogus (see nfs-sync --help)\n")
}
