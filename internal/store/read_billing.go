package store

import (
	"context"
	"fmt"
)

// HasBilling says whether the ledger ever billed anything (weights,
// Slurm's or the config's, in force for some job): reports show billing
// only then, so that a site without weights, or whose weighted
// partitions ran nothing, sees what it saw before. The monthly rollup is
// the smallest that holds every figure.
func (s *Ledger) HasBilling(ctx context.Context) (bool, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM rollup_monthly WHERE billing <> 0 LIMIT 1) AS b`).Scan(&n); err != nil {
		return false, fmt.Errorf("billed usage: %w", translate(err))
	}
	return n > 0, nil
}
