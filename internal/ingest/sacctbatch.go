package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Bounds of asking sacct about finished jobs (their details, their times):
// each kind of question is asked in batches of rows, a few calls a pass.
const (
	// sacctBatch is how many jobs one sacct call asks about.
	sacctBatch = 500
	// sacctPerPass bounds one kind's sacct calls in one pass, so that a
	// large backlog (a ledger from before the kind was asked) drains over
	// a few passes.
	sacctPerPass = 10
	// sacctGiveUp is how long after its end (details: else its start) a
	// job sacct does not know (or cannot be asked about) is asked about
	// again: slurmdbd may lag behind, but a dead sacct must not cost calls
	// forever.
	sacctGiveUp = 24 * time.Hour
)

// batchFunc asks sacct about the batch of rows past cursor (0: the first
// batch) with at most budget calls. It returns the cursor of the next batch
// when this one was full and done (more may wait), else 0, and the calls
// it made.
type batchFunc func(ctx context.Context, now time.Time, cursor int64, budget int) (int64, int, error)

// askInBatches runs batch from the first batch on until one returns 0,
// sacctPerPass calls are spent or ctx ends. A failed batch is logged with
// failed and ends the pass's asking (one timeout a pass); it never fails
// the pass. It reports whether every batch was asked.
func (in *Ingester) askInBatches(ctx context.Context, failed string, batch batchFunc) bool {
	now := in.d.Now()
	var cursor int64
	for calls := 0; calls < sacctPerPass; {
		if ctx.Err() != nil {
			return false
		}
		next, n, err := batch(ctx, now, cursor, sacctPerPass-calls)
		calls += n
		if err != nil {
			in.logSlurm(failed, err)
			return false
		}
		if next == 0 {
			return true
		}
		cursor = next
	}
	return true
}

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
