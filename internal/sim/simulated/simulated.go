// Package simulated registers the simulated GPU backend (gpu.backend =
// "simulated") with internal/gpu. Import it for its side effect in the
// builds that may run on simulated GPUs: tests, the demo, and the hooks
// built with -tags simulated for the real-Slurm harness. Production hooks
// do not import it, so they link neither the simulator nor go-nvml's mock.
package simulated

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/sim"
)

func init() { gpu.RegisterBackend("simulated", open) }

func open(cfg config.GPU, node string) (nvml.Interface, error) {
	s, err := sim.New(sim.Options{
		Node: node, Count: cfg.Simulated.Count, Model: cfg.Simulated.Model,
		Minors: cfg.Simulated.Minors, InitDelay: cfg.Simulated.InitDelay.Duration,
		Hang: cfg.Simulated.Hang, Fail: cfg.Simulated.Fail,
	})
	if err != nil {
		return nil, err
	}
	for i, l := range cfg.Simulated.MIG {
		if l == "" {
			continue
		}
		profiles := strings.Split(l, ",")
		if err := sim.CheckLayout(profiles); err != nil {
			return nil, fmt.Errorf("gpu.simulated.mig[%d]: %w", i, err)
		}
		s.Device(i).EnableMIGLayout(profiles)
	}
	return s, nil
}
