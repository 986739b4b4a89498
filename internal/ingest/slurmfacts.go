package ingest

import "context"

// slurmFacts refreshes, once a pass, what the ledger keeps of Slurm's
// accounting besides jobs: the account tree (accounts.go) and the
// cluster's capacity, node events and reservations (clusterfacts.go).
// Each asks sacctmgr within ingest.sacct_timeout; a failure is logged and
// retried next pass, and never fails the pass.
func (in *Ingester) slurmFacts(ctx context.Context) {
	if in.d.Sacctmgr == nil {
		return
	}
	in.fillAccounts(ctx)
	in.fillClusterFacts(ctx)
}
