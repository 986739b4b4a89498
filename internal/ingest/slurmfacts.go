package ingest

import (
	"context"
	"errors"
	"time"
)

// slurmFacts refreshes what the ledger keeps of Slurm's accounting besides
// jobs: the account tree (accounts.go) and the cluster's capacity, node
// events and reservations (clusterfacts.go). Each asks sacctmgr within
// ingest.sacct_timeout; a failure is logged and retried later, and never
// fails the pass. The account tree is asked first: when sacctmgr does not
// answer it, the cluster's facts are not asked either (one timeout a
// pass). When the daemon's gate skips it because the facts were read less
// than slurmFactsEvery ago (slurmgate.go), the cluster's facts are read
// only while they are behind: a backfill goes on a month a pass.
func (in *Ingester) slurmFacts(ctx context.Context) {
	if in.d.Sacctmgr == nil {
		return
	}
	switch err := in.fillAccounts(ctx); {
	case err == nil:
	case errors.Is(err, errSlurmFresh):
		if !in.clusterFactsBehind(ctx) {
			return
		}
	default:
		return
	}
	in.fillClusterFacts(ctx)
}

// clusterFactsBehind says whether the local cluster's facts are behind:
// never read, a backfill still going on, or last read up to more than
// slurmFactsEvery before now (or after now: a clock set back).
func (in *Ingester) clusterFactsBehind(ctx context.Context) bool {
	cluster, err := in.localCluster(ctx)
	if err != nil || cluster == "" {
		return err != nil // nothing to read, unless the ledger could not tell
	}
	m, ok, err := in.d.Store.ClusterFactsMarks(ctx, cluster)
	if err != nil || !ok || m.Back > m.Until {
		return true
	}
	age := in.d.Now().Sub(time.Unix(m.Read, 0))
	return age < 0 || age >= slurmFactsEvery
}
