package containercmd

import (
	"flag"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite packaging/man and packaging/completion from the command definitions")

func TestManAndCompletions(t *testing.T) {
	for name, app := range helpApps(t) {
		t.Run(name, func(t *testing.T) {
			cmdline.ManAndCompletions(t, "../../../packaging", name, app, *update, map[string][]string{name + " --dr": {"--dry-run"}})
		})
	}
}
