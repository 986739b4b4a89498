package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// perCluster groups items by their cluster, the clusters in the order they
// first appear: sacct answers for one cluster a call (-M), and a job id
// means a different job on each.
func perCluster[T any](items []T, cluster func(T) string) ([]string, map[string][]T) {
	var order []string
	groups := map[string][]T{}
	for _, it := range items {
		c := cluster(it)
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], it)
	}
	return order, groups
}

// askPerCluster calls ask once for each cluster of items, in order, at
// most budget times, and stops at the first call that fails: the rest
// waits for the next pass (one timeout a pass). It returns the calls made,
// whether every cluster was asked, and the failure.
func askPerCluster[T any](items []T, cluster func(T) string, budget int, ask func(cluster string, items []T) error) (int, bool, error) {
	order, groups := perCluster(items, cluster)
	calls := 0
	for _, c := range order {
		if calls == budget {
			return calls, false, nil
		}
		calls++
		if err := ask(c, groups[c]); err != nil {
			return calls, false, err
		}
	}
	return calls, true, nil
}

// sacctJobs runs `sacct -M cluster -j ID,... args...` within
// ingest.sacct_timeout, each job id once; an empty cluster is the local
// one (no -M). An error is the call's (sacct or slurmdbd down, or slow),
// not its output's.
func (in *Ingester) sacctJobs(ctx context.Context, cluster string, ids []uint64, args ...string) ([]byte, error) {
	list := make([]string, 0, len(ids))
	seen := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			list = append(list, strconv.FormatUint(id, 10))
		}
	}
	all := make([]string, 0, 4+len(args))
	if cluster != "" {
		all = append(all, "-M", cluster)
	}
	all = append(all, "-j", strings.Join(list, ","))
	all = append(all, args...)
	ctx, cancel := context.WithTimeout(ctx, in.d.Config.Ingest.SacctTimeout.Duration)
	defer cancel()
	out, err := in.d.Sacct(ctx, all...)
	if err != nil {
		if cluster == "" {
			return nil, fmt.Errorf("sacct for %d jobs: %w", len(list), err)
		}
		return nil, fmt.Errorf("sacct -M %s for %d jobs: %w", cluster, len(list), err)
	}
	return out, nil
}
