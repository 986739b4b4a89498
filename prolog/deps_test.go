package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The hooks run at every job start: the production build links no
// simulator, no go-nvml mock and no CLI library (binary size, init time);
// the simulated build (make build-simulated) links the simulator.
func TestHookDeps(t *testing.T) {
	banned := []string{
		"github.com/aicloud/gpusuite/internal/sim",
		"github.com/NVIDIA/go-nvml/pkg/nvml/mock",
		"github.com/urfave/cli",
		"github.com/russross/blackfriday",
	}
	for _, hook := range []string{"prolog", "epilog"} {
		for _, tc := range []struct {
			tags     string
			wantSims bool
		}{{"", false}, {"simulated", true}} {
			t.Run(hook+"/"+tc.tags, func(t *testing.T) {
				out, err := exec.Command("go", "list", "-tags", tc.tags, "-deps", "github.com/aicloud/gpusuite/"+hook).CombinedOutput()
				if err != nil {
					t.Fatalf("go list: %v\n%s", err, out)
				}
				var linked []string
				for _, dep := range strings.Fields(string(out)) {
					for _, b := range banned {
						if dep == b || strings.HasPrefix(dep, b+"/") {
							linked = append(linked, dep)
						}
					}
				}
				hasSim := strings.Contains(string(out), "github.com/aicloud/gpusuite/internal/sim/simulated\n")
				if hasSim != tc.wantSims || !tc.wantSims && len(linked) > 0 {
					t.Errorf("tags %q: links %v (simulated backend linked: %v, want %v)", tc.tags, linked, hasSim, tc.wantSims)
				}
			})
		}
	}
}
