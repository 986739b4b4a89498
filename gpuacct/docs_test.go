//go:build !simulated

// The simulated build has another demo command: the shipped pages are the
// production build's.

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
	cliwiretest.Golden(t, "../packaging/man/gpuacct.1", cliwiretest.Man(t, app), *update)
	bash := cliwiretest.Bash(app)
	cliwiretest.Golden(t, "../packaging/completion/bash/gpuacct", bash, *update)
	cliwiretest.Golden(t, "../packaging/completion/zsh/_gpuacct", cliwiretest.Zsh(app), *update)
	for line, want := range map[string][]string{
		"gpuacct rep":               {"report"},
		"gpuacct report te":         {"teams"},
		"gpuacct report teams --st": {"--store-url", "--start"},
		"gpuacct note ":             {"add", "list", "rm", "--help"},
		"gpuacct job --db ":         nil,
	} {
		if d := cmp.Diff(want, cliwiretest.BashComplete(t, bash, "gpuacct", line)); d != "" {
			t.Errorf("completing %q (-want +got)\n%s", line, d)
		}
	}
}
