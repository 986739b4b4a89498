package ingest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

const (
	// clusterFactsBackfill is how far back a new ledger's reads reach: a
	// year of sreport's cluster utilization to compare with.
	clusterFactsBackfill = 366 * 24 * time.Hour
	// clusterFactsStep is the most one read reaches before now: the
	// backfill (and a read after a long stop) goes a month a pass, so
	// that a large site's year of events need not fit one sacct_timeout.
	clusterFactsStep = 31 * 24 * time.Hour
	// clusterFactsOverlap is read again before the last read: slurmdbd
	// may record an event a while after it began, and the replace of the
	// window makes a fact read twice count once.
	clusterFactsOverlap = 24 * time.Hour
	// clusterFactsAhead is how far past now a read that reaches now goes
	// on, so that the reservations already planned are known (report
	// cluster counts only the past).
	clusterFactsAhead = 31 * 24 * time.Hour
	// maxResvNodes bounds the nodes of one reservation's hostlist, as
	// report cluster does when it expands it.
	maxResvNodes = 100000
)

// fillClusterFacts stores the local cluster's GPU capacity, node events
// and reservations from sacctmgr (`show event`, `show reservation`,
// Clusters= the local cluster), each call bounded by
// ingest.sacct_timeout. A pass reads from a day before the last read's
// mark to a month ahead (the reservations planned); a new ledger's first
// read takes the last month, and each pass then also reads one month
// further back until a year is in, so that no read need hold a large
// site's year of events within one timeout. The marks are kept in the
// ledger. report cluster computes the utilization from the facts
// (docs/utilization.md). A failure is logged and retried next pass.
// onlyBehind (the gate found the facts fresh) reads them only while they
// are behind (factsBehind), from the same ledger reads.
func (in *Ingester) fillClusterFacts(ctx context.Context, onlyBehind bool) {
	if err := in.clusterFacts(ctx, onlyBehind); err != nil {
		in.d.Log.Info("cluster capacity, node events and reservations not read from sacctmgr; retrying next pass", "err", err)
	}
}

// localCluster is the cluster whose facts this ingest reads: the
// ledger's only one; of several, cluster.name. "" (nothing to read) when
// the ledger has none yet, or several and cluster.name is none of them.
func (in *Ingester) localCluster(ctx context.Context) (string, error) {
	nodes, err := in.d.Store.Nodes(ctx)
	if err != nil {
		return "", fmt.Errorf("the ledger's clusters: %w", err)
	}
	var clusters []string
	for _, n := range nodes {
		if !slices.Contains(clusters, n.Cluster) {
			clusters = append(clusters, n.Cluster)
		}
	}
	switch name := in.d.Config.Cluster.Name; {
	case len(clusters) == 1:
		return clusters[0], nil
	case slices.Contains(clusters, name):
		return name, nil
	case len(clusters) > 1:
		in.d.Log.Info("the ledger holds several clusters: set cluster.name to the one whose slurmdbd this ingest asks, to read its capacity, events and reservations", "clusters", clusters)
	}
	return "", nil
}

func (in *Ingester) clusterFacts(ctx context.Context, onlyBehind bool) error {
	cluster, err := in.localCluster(ctx)
	if err != nil || cluster == "" {
		return err
	}
	now := in.d.Now()
	m, ok, err := in.d.Store.ClusterFactsMarks(ctx, cluster)
	if err != nil {
		return err
	}
	if onlyBehind && !factsBehind(m, ok, now) {
		return nil
	}
	from := now.Add(-clusterFactsStep)
	if ok {
		from = time.Unix(min(m.Read, now.Unix()), 0).Add(-clusterFactsOverlap)
	} else {
		m = store.FactsMarks{Back: from.Unix(), Until: now.Add(-clusterFactsBackfill).Unix()}
	}
	// Forward: to now and a month ahead, or a month on when the last read
	// is older than that (ingest stopped a while).
	to, read := from.Add(clusterFactsStep), from.Add(clusterFactsStep)
	if !to.Before(now) {
		to, read = now.Add(clusterFactsAhead), now
	}
	m.Read = read.Unix()
	if err := in.readClusterFacts(ctx, cluster, from, to, m); err != nil {
		return err
	}
	if m.Back <= m.Until {
		return nil
	}
	// Back: one more month of the backfill.
	back := time.Unix(max(m.Back-int64(clusterFactsStep/time.Second), m.Until), 0)
	end := time.Unix(m.Back, 0).Add(clusterFactsOverlap)
	m.Back = back.Unix()
	return in.readClusterFacts(ctx, cluster, back, end, m)
}

// readClusterFacts reads cluster's facts over [from, to] from sacctmgr
// and stores them, with the marks m.
func (in *Ingester) readClusterFacts(ctx context.Context, cluster string, from, to time.Time, m store.FactsMarks) error {
	loc := in.d.SacctLocation
	window := []string{"Clusters=" + cluster, "Start=" + from.In(loc).Format("2006-01-02T15:04:05"), "End=" + to.In(loc).Format("2006-01-02T15:04:05")}
	out, err := in.sacctmgr(ctx, append([]string{"-P", "-n", "show", "event"}, append(window, "Format="+eventFormat)...)...)
	if err != nil {
		return fmt.Errorf("sacctmgr show event: %w", err)
	}
	events, badEvents, err := parseSlurmEvents(string(out), loc)
	if err != nil {
		return err
	}
	out, err = in.sacctmgr(ctx, append([]string{"-P", "-n", "show", "reservation"}, append(window, "Format="+resvFormat)...)...)
	if err != nil {
		return fmt.Errorf("sacctmgr show reservation: %w", err)
	}
	resvs, badResvs, err := parseSlurmReservations(string(out), loc)
	if err != nil {
		return err
	}
	if badEvents+badResvs > 0 {
		in.d.Log.Warn("sacctmgr lines not understood, left out of the cluster's facts", "events", badEvents, "reservations", badResvs)
	}
	b, err := in.d.Store.Begin(ctx, in.d.Now())
	if err != nil {
		return err
	}
	if err := b.SetClusterFacts(store.ClusterFacts{From: from.Unix(), To: to.Unix(), Clusters: []string{cluster}, Marks: &m,
		Events: events, Reservations: resvs}); err != nil {
		b.Rollback()
		return err
	}
	if err := b.Commit(); err != nil {
		return err
	}
	in.d.Log.Debug("cluster facts from sacctmgr", "cluster", cluster, "events", len(events), "reservations", len(resvs), "from", from, "to", to)
	return nil
}

// sacctmgr runs one sacctmgr call within ingest.sacct_timeout: the
// account tree and the cluster's facts alike.
func (in *Ingester) sacctmgr(ctx context.Context, args ...string) ([]byte, error) {
	return in.bounded(ctx, in.d.Sacctmgr, args...)
}

// bounded runs one call of a Slurm command (sacctmgr, scontrol) within
// ingest.sacct_timeout and returns what it printed.
func (in *Ingester) bounded(ctx context.Context, run Sacct, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, in.d.Config.Ingest.SacctTimeout.Duration)
	defer cancel()
	return run(ctx, args...)
}
