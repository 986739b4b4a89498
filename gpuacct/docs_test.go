//go:build !simulated

// The simulated build has another demo command: the shipped pages are the
// production build's.

package main

import (
	"flag"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite packaging/man and packaging/completion from the command definitions")

func TestManAndCompletions(t *testing.T) {
	cmdline.ManAndCompletions(t, "../packaging", "gpuacct", helpApp(), *update, map[string][]string{
		"gpuacct rep":               {"report"},
		"gpuacct report te":         {"teams"},
		"gpuacct report teams --st": {"--store-url", "--start"},
		"gpuacct note ":             {"add", "list", "rm", "--help"},
		"gpuacct job --db ":         nil,
	})
}
