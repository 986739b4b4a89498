package main

import (
	"flag"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite packaging/man and packaging/completion from the command definitions")

func TestManAndCompletions(t *testing.T) {
	cmdline.ManAndCompletions(t, "../packaging", "nfs-sync", helpApp(), *update, map[string][]string{
		"nfs-sync w":            {"watch"},
		"nfs-sync watch --max-": {"--max-fixes-per-second", "--max-watches"},
	})
}
