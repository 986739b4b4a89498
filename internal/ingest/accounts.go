package ingest

import "context"

// fillAccounts stores Slurm's account tree (each account's parent).
func (in *Ingester) fillAccounts(ctx context.Context) {}
