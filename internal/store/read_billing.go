package store

import (
	"context"
	"fmt"
)

// HasBilling says whether the ledger ever recorded billing weights
// (Slurm's or the config's): reports show billing only then, so that a
// site without weights sees what it saw before.
func (s *Ledger) HasBilling(ctx context.Context) (bool, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM billing_weights WHERE weights != '' LIMIT 1) AS w`).Scan(&n); err != nil {
		return false, fmt.Errorf("billing weights: %w", translate(err))
	}
	return n > 0, nil
}
