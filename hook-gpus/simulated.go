//go:build simulated

package main

// The simulated build may open gpu.backend = "simulated" (make
// build-simulated), for the hooks of the real-Slurm harness and the
// benchmarks; the production build links no simulator.
import _ "github.com/aicloud/gpusuite/internal/sim/simulated"
