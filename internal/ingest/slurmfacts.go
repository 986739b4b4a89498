package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
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
	fresh := false
	switch err := in.fillAccounts(ctx); {
	case err == nil:
	case errors.Is(err, errSlurmFresh):
		fresh = true
	default:
		return
	}
	in.fillClusterFacts(ctx, fresh)
}

// factsBehind says whether a cluster's facts with marks m (ok: any read)
// are behind at now: never read, a backfill still going on, or last read
// up to more than slurmFactsEvery before now (or after now: a clock set
// back).
func factsBehind(m store.FactsMarks, ok bool, now time.Time) bool {
	if !ok || m.Back > m.Until {
		return true
	}
	age := now.Sub(time.Unix(m.Read, 0))
	return age < 0 || age >= slurmFactsEvery
}
