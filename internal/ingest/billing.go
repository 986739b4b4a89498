package ingest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aicloud/gpusuite/internal/slurm"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// fillBilling records the billing weights in force (docs/budgets.md),
// each pass before the runs sacct answers for: the config's [billing]
// weights per GPU model, and each partition's TRESBillingWeights and
// PriorityFlags=MAX_TRES from scontrol (slurmctld, not slurmdbd: two
// light calls), each bounded by ingest.sacct_timeout. The ledger keeps a
// row where they changed. A failure is logged and retried next pass.
func (in *Ingester) fillBilling(ctx context.Context) {
	if err := in.billing(ctx); err != nil {
		in.logSlurm("billing weights not read; retrying next pass", err)
	}
}

func (in *Ingester) billing(ctx context.Context) error {
	var parts []store.BillingWeights
	if in.d.Scontrol != nil {
		var err error
		if parts, err = in.partitionWeights(ctx); err != nil {
			return err
		}
	}
	model := configWeights(in.d.Config.Billing.Weights)
	if len(parts) == 0 && model == "" {
		return nil
	}
	cluster, err := in.localCluster(ctx)
	if err != nil || cluster == "" {
		return err
	}
	b, err := in.d.Store.Begin(ctx, in.d.Now())
	if err != nil {
		return err
	}
	at := in.d.Now().Unix()
	if err := b.SetBillingWeights(cluster, store.BillingSlurm, at, parts); err != nil {
		b.Rollback()
		return err
	}
	if model != "" {
		if err := b.SetBillingWeights(cluster, store.BillingConfig, at, []store.BillingWeights{{Weights: model}}); err != nil {
			b.Rollback()
			return err
		}
	}
	return b.Commit()
}

// partitionWeights asks scontrol for each partition's weights and the
// MAX_TRES flag.
func (in *Ingester) partitionWeights(ctx context.Context) ([]store.BillingWeights, error) {
	args := []string{"show", "partition", "--oneliner"}
	out, err := in.scontrol(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", slurmstate.CommandLine("scontrol", args), err)
	}
	ps, err := slurm.ParsePartitions(string(out))
	if err != nil {
		return nil, err
	}
	cfg, err := in.scontrol(ctx, "show", "config")
	if err != nil {
		return nil, fmt.Errorf("scontrol show config: %w", err)
	}
	maxTRES := slurm.MaxTRES(string(cfg))
	parts := make([]store.BillingWeights, len(ps))
	for i, p := range ps {
		parts[i] = store.BillingWeights{Partition: p.Name, Weights: p.Weights, MaxTRES: maxTRES}
	}
	return parts, nil
}

// scontrol runs one scontrol call within ingest.sacct_timeout.
func (in *Ingester) scontrol(ctx context.Context, args ...string) ([]byte, error) {
	return in.bounded(ctx, in.d.Scontrol, args...)
}

// configWeights is [billing] weights as the ledger keeps them: weights
// text keyed "GRES/gpu:MODEL", sorted, so that the same config makes the
// same text.
func configWeights(w map[string]float64) string {
	parts := make([]string, 0, len(w))
	for model, v := range w {
		parts = append(parts, "GRES/gpu:"+model+"="+strconv.FormatFloat(v, 'g', -1, 64))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// slurmBilling is Slurm's billing of a run from sacct's AllocTRES
// ("billing=10,cpu=2,..."); false where it has none.
func slurmBilling(allocTRES string) (float64, bool) {
	tres, err := slurm.ParseTRES(allocTRES)
	if err != nil {
		return 0, false
	}
	v, ok := tres["billing"]
	return v, ok
}
