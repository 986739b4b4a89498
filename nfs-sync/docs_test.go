package main

import (
	"flag"
	"testing"

	"github.com/aicloud/gpusuite/internal/cli/cliwire/cliwiretest"
)

var update = flag.Bool("update", false, "rewrite packaging/man and packaging/completion from the command definitions")

func TestManAndCompletions(t *testing.T) {
	cliwiretest.ManAndCompletions(t, "../packaging", "nfs-sync", helpApp(), *update, map[string][]string{
		"nfs-sync w":            {"watch"},
		"nfs-sync watch --max-": {"--max-fixes-per-second", "--max-watches"},
	})
}
