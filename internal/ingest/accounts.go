package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// accountTreeArgs ask sacctmgr for every association with its parent
// account: an account's own association (no user) names its parent, which
// is what reports roll teams up by (sreport's AccountUtilizationByUser
// tree). A fresh slice each call: no caller can change another's.
func accountTreeArgs() []string {
	return []string{"-n", "-P", "show", "associations", "format=Cluster,Account,User,ParentName"}
}

// fillAccounts stores Slurm's account tree (each account's parent), in a
// transaction of its own. sacctmgr failing, or listing what does not
// parse, is logged and tried again next time; the tree last recorded
// stays. It returns the call's error when sacctmgr did not answer (nil
// when it did, whatever it listed).
func (in *Ingester) fillAccounts(ctx context.Context) error {
	answered, err := in.storeAccounts(ctx)
	if err != nil {
		in.logSlurm("Slurm's account tree not refreshed; retrying later", err)
	}
	if answered {
		return nil
	}
	return err
}

func (in *Ingester) storeAccounts(ctx context.Context) (bool, error) {
	args := accountTreeArgs()
	out, err := in.sacctmgr(ctx, args...)
	if err != nil {
		return false, fmt.Errorf("%s: %w", slurmstate.CommandLine("sacctmgr", args), err)
	}
	accts, err := parseAccountTree(string(out), store.MaxSlurmAccounts)
	if err != nil {
		return true, err
	}
	if len(accts) == 0 {
		return true, nil // nothing to record: a slurmdbd with no accounts yet
	}
	b, err := in.d.Store.Begin(ctx, in.d.Now())
	if err != nil {
		return true, err
	}
	if err := b.SetSlurmAccounts(accts); err != nil {
		b.Rollback()
		return true, err
	}
	if err := b.Commit(); err != nil {
		return true, err
	}
	in.d.Log.Debug("Slurm's account tree recorded", "accounts", len(accts))
	return true, nil
}

// parseAccountTree reads `sacctmgr -n -P show associations
// format=Cluster,Account,User,ParentName`: one line per association.
// Only an account's own association (User empty) places it; root is the
// top and not recorded, and an account under root has Parent "root".
// Users' associations, lines that do not have four fields and repeats are
// skipped. More than limit accounts is an error: the listing is not what
// was asked for.
func parseAccountTree(out string, limit int) ([]store.SlurmAccount, error) {
	var accts []store.SlurmAccount
	seen := map[[2]string]bool{}
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "|")
		if len(f) != 4 {
			continue
		}
		cluster, account, user, parent := strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2]), strings.TrimSpace(f[3])
		if user != "" || cluster == "" || account == "" || account == "root" {
			continue
		}
		// Slurm keeps names in lower case; so do the job records.
		cluster, account, parent = strings.ToLower(cluster), strings.ToLower(account), strings.ToLower(parent)
		if parent == "" || parent == account {
			parent = "root"
		}
		k := [2]string{cluster, account}
		if seen[k] {
			continue
		}
		seen[k] = true
		if len(accts) == limit {
			return nil, fmt.Errorf("sacctmgr listed more than %d accounts: not recorded", limit)
		}
		accts = append(accts, store.SlurmAccount{Cluster: cluster, Account: account, Parent: parent})
	}
	return accts, nil
}
