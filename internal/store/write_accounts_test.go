package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestSlurmAccounts: the account tree is stored as sacctmgr lists it; a
// later listing moves an account to its new parent and keeps one Slurm
// no longer lists.
func TestSlurmAccounts(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, ledgerdb.NewLedger(t), false)
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for _, set := range [][]SlurmAccount{
		{{"c", "physics", "science"}, {"c", "science", "root"}, {"c", "bio", "science"}},
		{{"c", "physics", "root"}, {"c", "science", "root"}, {"d", "physics", "root"}},
	} {
		batchOf(t, s, now, func(b *Batch) error { return b.SetSlurmAccounts(set) })
		now = now.Add(time.Hour)
	}
	got, err := s.SlurmAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []SlurmAccount{{"c", "bio", "science"}, {"c", "physics", "root"}, {"c", "science", "root"}, {"d", "physics", "root"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("account tree (-want +got):\n%s", d)
	}
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	if err := b.SetSlurmAccounts(make([]SlurmAccount, MaxSlurmAccounts+1)); err == nil {
		t.Error("SetSlurmAccounts over the bound: nil error")
	}
}
