package containercmd

import (
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/cliwire/cliwiretest"
)

var update = flag.Bool("update", false, "rewrite packaging/man and packaging/completion from the command definitions")

func TestManAndCompletions(t *testing.T) {
	for name, app := range helpApps(t) {
		t.Run(name, func(t *testing.T) {
			cliwiretest.Golden(t, "../packaging/man/"+name+".1", cliwiretest.Man(t, app), *update)
			bash := cliwiretest.Bash(app)
			cliwiretest.Golden(t, "../packaging/completion/bash/"+name, bash, *update)
			cliwiretest.Golden(t, "../packaging/completion/zsh/_"+name, cliwiretest.Zsh(app), *update)
			if d := cmp.Diff([]string{"--dry-run"}, cliwiretest.BashComplete(t, bash, name, name+" --dr")); d != "" {
				t.Errorf("completing --dr (-want +got)\n%s", d)
			}
		})
	}
}
