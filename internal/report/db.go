// Package report is gpuacct's reading side: sreport-style GPU-hour reports
// by user, team, account, partition, node and model; per-job detail;
// exports; plots; and the monitoring check. It only ever
// opens the accounting database read-only (the ingest service is its one
// writer, docs/store.md).
//
// Files:
//   - db.go, scope.go, bounds.go: the read-only handle, the clusters a
//     command reads, bad input.
//   - report.go, usage.go, units.go, tree.go, knownteams.go: the
//     aggregate reports over the rollups, their sums and units, the
//     organisation tree, the teams known to the ledger.
//   - jobs.go, job.go, jobtext.go, jobmetrics.go: job lists and one job's
//     detail, its text, its metrics and GPU events; migadvice.go: the MIG
//     slice a run would fit, in both.
//   - series.go, series_long.go: a job's series, folded to bounded points.
//   - export.go, exportsamples.go: gpuacct export.
//   - plots.go: the data behind gpuacct plot.
//   - check.go, checkfiles.go, filtercheck.go: gpuacct check, and filters
//     checked against the ledger with near matches.
//   - cluster.go, cluster_calc.go: cluster utilization (docs/utilization.md).
//   - dashboard.go: the reads the dashboard needs beside the reports.
package report

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Ledger is the ledger opened for reading.
type Ledger struct {
	st *store.Ledger
	// path names the ledger in messages: the file, or the URL without
	// its password.
	path string
	busy time.Duration
	// nodeNames maps nodes.id to its name: where the cluster is shown
	// (one read, or a cluster column) that is enough; nodeLabel adds the
	// cluster where it is not.
	nodeNames map[int64]string
	// nodeCluster maps nodes.id to its cluster.
	nodeCluster map[int64]string
	// months: the ledger has rollup_monthly (schema 2 on).
	months bool
	// noSpans reads a bucket's months day by day, never as UTC months
	// less their edge hours (spanPlan): the reference the spans are
	// tested against.
	noSpans bool
	// tree: the ledger has slurm_accounts (slurmTreeSchema on).
	tree bool
	// hourSums: the ledger has rollup_hourly_sum (hourSumsSchema on).
	hourSums bool
	// keepAll reads every column of every fact, as reports did before
	// Filter.keep: the reference keepOf is tested against.
	keepAll bool
	// modelRollups: the ledger has rollup_model_hour
	// (store.ModelRollupsSchema on).
	modelRollups bool
	// nodeRollups: the ledger has the node rollups (store.NodeRollupsSchema
	// on); off, reports by node read rollup_hourly (their tests' reference).
	nodeRollups bool
	// zoneRollups: the ledger has the zone rollups (store.ZoneRollupsSchema
	// on); off, days and weeks are read as before (their tests' reference).
	zoneRollups bool
	// clusters are the clusters that shipped records, sorted.
	clusters []string
	// between, when set, runs between two statements of a plan: tests
	// commit a pass there.
	between func()
	// handed, when set, runs for every rollup row the store hands over,
	// with the grain of its piece: tests count what a report read.
	handed func(grain)
}

// OpenDB opens the ledger at loc read-only: a SQLite file's path, or a
// PostgreSQL URL (postgres://…). A missing file and a file or database
// that is not a gpusuite store are errors here, not at the first query.
func OpenDB(ctx context.Context, loc string, busy time.Duration) (*Ledger, error) {
	o := store.At(loc)
	o.ReadOnly, o.BusyTimeout = true, busy
	path := loc
	if o.URL != "" {
		path = store.RedactURL(loc)
	} else {
		if _, err := os.Stat(loc); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("accounting database %s does not exist (set store.path or --db; gpuacct serve creates it): %w", loc, fs.ErrNotExist)
			}
			return nil, fmt.Errorf("accounting database %s: %w", loc, err)
		}
	}
	st, err := store.Open(ctx, o)
	if err != nil {
		return nil, describe(path, busy, err)
	}
	v, err := st.Version(ctx)
	if err != nil {
		st.Close()
		return nil, describe(path, busy, err)
	}
	// A ledger the ingest has not migrated yet (schema 1, the daemon not
	// restarted on the new gpuacct) has no rollup_monthly: read its days.
	d := &Ledger{st: st, path: path, busy: busy, months: v >= 2, tree: v >= slurmTreeSchema, hourSums: v >= hourSumsSchema,
		nodeRollups: v >= store.NodeRollupsSchema, modelRollups: v >= store.ModelRollupsSchema,
		zoneRollups: v >= store.ZoneRollupsSchema}
	if err := d.loadNodes(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return d, nil
}

// snapshot runs fn with d reading one snapshot of the ledger
// (store.ReadSnapshot, which keeps one already open): the statements of
// one report see the same commits.
func (d *Ledger) snapshot(ctx context.Context, fn func(d *Ledger) error) error {
	var ferr error
	err := d.st.ReadSnapshot(ctx, func(r *store.Ledger) error {
		c := *d
		c.st = r
		ferr = fn(&c)
		return ferr
	})
	if ferr != nil {
		return ferr // fn's own, worded by fn
	}
	return d.wrap(err)
}

// Close closes the database.
func (d *Ledger) Close() error { return d.st.Close() }

// Label sets how d's messages name the ledger: its path or URL by
// default, which a web client must not see (it names the server's
// files), so the dashboard says "the ledger".
func (d *Ledger) Label(name string) { d.path = name }

// describe turns the store's busy and not-a-ledger errors into one line
// that says what to do.
func describe(path string, busy time.Duration, err error) error {
	switch {
	case errors.Is(err, store.ErrBusy):
		return fmt.Errorf("read %s: database is locked: the ingest held it longer than store.busy_timeout (%s); try again: %w", path, busy, err)
	case errors.Is(err, store.ErrNotLedger):
		return fmt.Errorf("read %s: not a gpusuite accounting database: %w", path, err)
	}
	return fmt.Errorf("read %s: %w", path, err)
}

func (d *Ledger) wrap(err error) error {
	if err == nil {
		return nil
	}
	return describe(d.path, d.busy, err)
}

func (d *Ledger) loadNodes(ctx context.Context) error {
	rows, err := d.st.Nodes(ctx)
	if err != nil {
		return d.wrap(err)
	}
	clusters := map[string]bool{}
	for _, n := range rows {
		clusters[n.Cluster] = true
	}
	d.nodeNames = map[int64]string{}
	d.nodeCluster = map[int64]string{}
	d.clusters = d.clusters[:0]
	for c := range clusters {
		d.clusters = append(d.clusters, c)
	}
	sort.Strings(d.clusters)
	for _, n := range rows {
		d.nodeCluster[n.ID] = n.Cluster
		d.nodeNames[n.ID] = n.Name
	}
	return nil
}

// nodeLabel is node id's name, as cluster/name when lines of several
// clusters are shown without a cluster column: clusters are the ones
// read (none: all of them).
func (d *Ledger) nodeLabel(id int64, clusters []string) string {
	if len(clusters) == 1 || (len(clusters) == 0 && len(d.clusters) <= 1) {
		return d.nodeNames[id]
	}
	return d.nodeCluster[id] + "/" + d.nodeNames[id]
}

// nodeIDs resolves node names (or cluster/name) to ids; an unknown name
// is an error, and so is a cluster/name outside clusters, the clusters
// read (none: all).
func (d *Ledger) nodeIDs(names, clusters []string) ([]int64, error) {
	var out []int64
	for _, want := range names {
		found := false
		for id, n := range d.nodeNames {
			if n == want || d.nodeCluster[id]+"/"+n == want {
				out = append(out, id)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("--nodes: unknown node %q (no record from it in %s)", want, d.path)
		}
		if c, _, ok := strings.Cut(want, "/"); ok && len(clusters) > 0 && !slices.Contains(clusters, c) {
			return nil, badInput("--nodes %s: that node is on cluster %s, which is not read (-M %s): drop the cluster from the name, or choose it with -M",
				want, c, strings.Join(clusters, ","))
		}
	}
	return out, nil
}
