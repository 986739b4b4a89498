package ingest

import "context"

// slurmFacts refreshes what the ledger keeps of Slurm's accounting besides
// jobs: the account tree (accounts.go) and the cluster's capacity, node
// events and reservations (clusterfacts.go). Each asks sacctmgr within
// ingest.sacct_timeout; a failure is logged and retried later, and never
// fails the pass. The account tree is asked first: when sacctmgr does not
// answer it, the cluster's facts are not asked either (one timeout a
// pass), and when the daemon's gate skips it (read less than
// slurmFactsEvery ago, slurmgate.go) neither are they.
func (in *Ingester) slurmFacts(ctx context.Context) {
	if in.d.Sacctmgr == nil {
		return
	}
	if !in.fillAccounts(ctx) {
		return
	}
	in.fillClusterFacts(ctx)
}
