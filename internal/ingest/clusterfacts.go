package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

const (
	// clusterFactsBackfill is how far back the first read of a ledger
	// reaches: a year of sreport's cluster utilization to compare with.
	clusterFactsBackfill = 366 * 24 * time.Hour
	// clusterFactsOverlap is read again before the last read: slurmdbd
	// may record an event a while after it began, and the replace of the
	// window makes a fact read twice count once.
	clusterFactsOverlap = 24 * time.Hour
	// clusterFactsAhead is how far past now a read reaches, so that the
	// reservations already planned are known (report cluster counts only
	// the past).
	clusterFactsAhead = 31 * 24 * time.Hour
)

// fillClusterFacts stores the cluster's GPU capacity, node events and
// reservations from sacctmgr (`show event`, `show reservation`, the local
// cluster as slurm.conf names it), each call bounded by
// ingest.sacct_timeout, over the window from a day before the last read
// to a month ahead (the reservations planned). report cluster
// computes the utilization from them (docs/utilization.md). A failure is
// logged and retried next pass.
func (in *Ingester) fillClusterFacts(ctx context.Context) {
	if err := in.clusterFacts(ctx); err != nil {
		in.d.Log.Info("cluster capacity, node events and reservations not read from sacctmgr; retrying next pass", "err", err)
	}
}

func (in *Ingester) clusterFacts(ctx context.Context) error {
	now := in.d.Now()
	from := now.Add(-clusterFactsBackfill)
	last, ok, err := in.d.Store.ClusterFactsFrom(ctx)
	if err != nil {
		return err
	}
	if ok {
		from = time.Unix(min(last, now.Unix()), 0).Add(-clusterFactsOverlap)
	}
	loc := in.d.SacctLocation
	to := now.Add(clusterFactsAhead)
	window := []string{"Start=" + from.In(loc).Format("2006-01-02T15:04:05"), "End=" + to.In(loc).Format("2006-01-02T15:04:05")}
	out, err := in.clusterSacctmgr(ctx, append([]string{"-P", "-n", "show", "event"}, append(window, "Format="+eventFormat)...)...)
	if err != nil {
		return fmt.Errorf("sacctmgr show event: %w", err)
	}
	events, badEvents, err := parseSlurmEvents(string(out), loc)
	if err != nil {
		return err
	}
	out, err = in.clusterSacctmgr(ctx, append([]string{"-P", "-n", "show", "reservation"}, append(window, "Format="+resvFormat)...)...)
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
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	if err := b.SetClusterFacts(store.ClusterFacts{From: from.Unix(), To: to.Unix(), Events: events, Reservations: resvs}); err != nil {
		b.Rollback()
		return err
	}
	if err := b.Commit(); err != nil {
		return err
	}
	in.d.Log.Debug("cluster facts from sacctmgr", "events", len(events), "reservations", len(resvs), "from", from)
	return nil
}

// clusterSacctmgr runs one sacctmgr call within ingest.sacct_timeout.
func (in *Ingester) clusterSacctmgr(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, in.d.Config.Ingest.SacctTimeout.Duration)
	defer cancel()
	return in.d.Sacctmgr(ctx, args...)
}
