package store

import (
	"context"
	"fmt"
)

// SlurmAccount is one account of Slurm's account tree: Parent is the
// account above it ("root" under the top).
type SlurmAccount struct {
	Cluster, Account, Parent string
}

// MaxSlurmAccounts bounds the account tree read or written at once: a
// site with more accounts than this is not one sacctmgr lists sensibly.
const MaxSlurmAccounts = 100000

// SetSlurmAccounts records the accounts sacctmgr lists now. An account
// Slurm no longer lists keeps its last parent: past usage still rolls up
// where it was.
func (b *Batch) SetSlurmAccounts(accounts []SlurmAccount) error {
	if len(accounts) > MaxSlurmAccounts {
		return fmt.Errorf("store account tree: %d accounts, at most %d", len(accounts), MaxSlurmAccounts)
	}
	for _, a := range accounts {
		if _, err := b.exec(`INSERT INTO slurm_accounts(cluster, account, parent, seen) VALUES (?, ?, ?, ?)
 ON CONFLICT(cluster, account) DO UPDATE SET parent = excluded.parent, seen = excluded.seen`,
			a.Cluster, a.Account, a.Parent, b.now.Unix()); err != nil {
			return fmt.Errorf("store account %s/%s: %w", a.Cluster, a.Account, err)
		}
	}
	return nil
}

// SlurmAccounts is the account tree as last recorded, by cluster then
// account.
func (s *Ledger) SlurmAccounts(ctx context.Context) ([]SlurmAccount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cluster, account, parent FROM slurm_accounts ORDER BY cluster, account LIMIT ?`, MaxSlurmAccounts+1)
	out, err := collect(rows, err, func(r batchRows, a *SlurmAccount) error { return r.Scan(&a.Cluster, &a.Account, &a.Parent) })
	if err != nil {
		return nil, fmt.Errorf("read account tree: %w", translate(err))
	}
	if len(out) > MaxSlurmAccounts {
		return nil, fmt.Errorf("read account tree: more than %d accounts", MaxSlurmAccounts)
	}
	return out, nil
}
