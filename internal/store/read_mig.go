package store

import (
	"context"
	"fmt"
)

// HasMIG says whether the ledger holds a MIG instance: a site that cuts
// no GPU into slices is told nothing of slices (its outputs stay as they
// were). The gpus table is one row a GPU, and the scan stops at the first.
func (s *Ledger) HasMIG(ctx context.Context) (bool, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM gpus WHERE uuid LIKE 'MIG-%' LIMIT 1) AS m`).Scan(&n); err != nil {
		return false, fmt.Errorf("MIG instances: %w", translate(err))
	}
	return n > 0, nil
}
