package main

import (
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/cliwire/cliwiretest"
)

var update = flag.Bool("update", false, "rewrite packaging/man and packaging/completion from the command definitions")

func TestManAndCompletions(t *testing.T) {
	app := helpApp()
	cliwiretest.Golden(t, "../packaging/man/nfs-sync.1", cliwiretest.Man(t, app), *update)
	bash := cliwiretest.Bash(app)
	cliwiretest.Golden(t, "../packaging/completion/bash/nfs-sync", bash, *update)
	cliwiretest.Golden(t, "../packaging/completion/zsh/_nfs-sync", cliwiretest.Zsh(app), *update)
	for line, want := range map[string][]string{
		"nfs-sync w":            {"watch"},
		"nfs-sync watch --max-": {"--max-fixes-per-second", "--max-watches"},
	} {
		if d := cmp.Diff(want, cliwiretest.BashComplete(t, bash, "nfs-sync", line)); d != "" {
			t.Errorf("completing %q (-want +got)\n%s", line, d)
		}
	}
}
