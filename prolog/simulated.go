//go:build simulated

package main

// The simulated build may open gpu.backend = "simulated" (make
// build-simulated); the production build links no simulator.
import _ "github.com/aicloud/gpusuite/internal/sim/simulated"
