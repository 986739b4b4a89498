package config

import (
	"fmt"
	"math"
	"strings"
)

// Billing is the [billing] section: GPU billing weights for a site whose
// Slurm partitions have no TRESBillingWeights (docs/budgets.md). Where a
// partition has them, Slurm's own billing counts and these are not read.
type Billing struct {
	// Weights are billing units per GPU-second (per GPU-hour alike) by GPU
	// model, as the agent names the model ("NVIDIA A100-SXM4-80GB").
	Weights map[string]float64 `toml:"weights"`
}

func (b *Billing) validate() error {
	for model, w := range b.Weights {
		if model == "" || strings.ContainsAny(model, ",=") || w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("key \"billing.weights\": model %q: weight %v is not a model's weight (0 or more)", model, w)
		}
	}
	return nil
}
