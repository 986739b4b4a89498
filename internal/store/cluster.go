package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SlurmEvent is one row of `sacctmgr show event`: with Node "" the
// cluster's own (its GPUs from Start to End), else an outage of the
// node's GPUs. End 0 means still in effect.
type SlurmEvent struct {
	Cluster, Node string
	Start, End    int64 // Unix seconds
	State         uint32
	Reason        string
	GPUs          int64
}

// SlurmReservation is one record of `sacctmgr show reservation`: GPUs of
// Nodes (a Slurm hostlist) set aside from Start to End.
type SlurmReservation struct {
	Cluster    string
	ID         int64
	Name       string
	Start, End int64
	Flags      string
	Nodes      string
	GPUs       int64
}

// MaxClusterFacts bounds the events or reservations written or read at
// once: more than a pass's sacctmgr output or a report's window should
// ever hold.
const MaxClusterFacts = 200000

// ClusterFacts is what one sacctmgr read of events and reservations
// over [From, To] returned.
type ClusterFacts struct {
	From, To int64
	// Clusters are those the read asked for: their facts in the window
	// are replaced, other clusters' kept. Empty: the clusters the facts
	// name.
	Clusters []string
	// Read, when set, is how far the read is complete (Unix seconds):
	// the next read of each of Clusters starts there (ClusterFactsRead).
	Read         int64
	Events       []SlurmEvent
	Reservations []SlurmReservation
}

// clusterFactsReadKey is the meta key of how far cluster's facts were
// read.
func clusterFactsReadKey(cluster string) string { return "slurm_facts_read." + cluster }

// SetClusterFacts replaces the events and reservations that overlap
// [f.From, f.To] of f.Clusters by those f lists: sacctmgr lists every one
// that overlaps its window, so an outage that ended takes its end, a
// reservation changed before it began loses its old times, and one
// deleted in Slurm goes. Other clusters' facts stay: a shared ledger may
// hold some that this read did not ask for. Writing the same facts twice
// changes nothing.
func (b *Batch) SetClusterFacts(f ClusterFacts) error {
	if len(f.Events) > MaxClusterFacts || len(f.Reservations) > MaxClusterFacts {
		return fmt.Errorf("store cluster facts: %d events and %d reservations, at most %d each", len(f.Events), len(f.Reservations), MaxClusterFacts)
	}
	clusters := f.Clusters
	if len(clusters) == 0 {
		clusters = factClusters(f)
	}
	if len(clusters) > 0 {
		for _, del := range []string{`DELETE FROM slurm_events WHERE (end IS NULL OR end >= ?) AND start <= ?`,
			`DELETE FROM slurm_reservations WHERE end >= ? AND start <= ?`} {
			var q strings.Builder
			q.WriteString(del)
			args := []any{f.From, f.To}
			inList(&q, &args, "cluster", clusters)
			if _, err := b.exec(q.String(), args...); err != nil {
				return fmt.Errorf("store cluster facts: %w", err)
			}
		}
	}
	for _, e := range f.Events {
		var end any
		if e.End > 0 {
			end = e.End
		}
		if _, err := b.exec(`INSERT INTO slurm_events(cluster, node, start, end, state, reason, gpus, seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT(cluster, node, start) DO UPDATE SET end = excluded.end, state = excluded.state, reason = excluded.reason, gpus = excluded.gpus, seen = excluded.seen`,
			e.Cluster, e.Node, e.Start, end, int64(e.State), e.Reason, e.GPUs, b.now.Unix()); err != nil {
			return fmt.Errorf("store slurm event %s/%s at %d: %w", e.Cluster, e.Node, e.Start, err)
		}
	}
	for _, r := range f.Reservations {
		if _, err := b.exec(`INSERT INTO slurm_reservations(cluster, id, start, end, name, flags, nodes, gpus, seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT(cluster, id, start) DO UPDATE SET end = excluded.end, name = excluded.name, flags = excluded.flags, nodes = excluded.nodes, gpus = excluded.gpus, seen = excluded.seen`,
			r.Cluster, r.ID, r.Start, r.End, r.Name, r.Flags, r.Nodes, r.GPUs, b.now.Unix()); err != nil {
			return fmt.Errorf("store slurm reservation %s/%d at %d: %w", r.Cluster, r.ID, r.Start, err)
		}
	}
	if f.Read != 0 {
		for _, c := range f.Clusters {
			if _, err := b.exec(`INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
				clusterFactsReadKey(c), strconv.FormatInt(f.Read, 10)); err != nil {
				return fmt.Errorf("store cluster facts' read of %s: %w", c, err)
			}
		}
	}
	return nil
}

// factClusters are the clusters f's facts name, in first-seen order.
func factClusters(f ClusterFacts) []string {
	var out []string
	add := func(c string) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, e := range f.Events {
		add(e.Cluster)
	}
	for _, r := range f.Reservations {
		add(r.Cluster)
	}
	return out
}

// ClusterFactsRead is how far cluster's facts were read (the Read of the
// last SetClusterFacts that asked for it): the next read starts there. It
// is the read's own mark, not the facts' seen times, so it moves on when
// Slurm lists no fact at all. ok is false when nothing was read yet.
func (s *Store) ClusterFactsRead(ctx context.Context, cluster string) (read int64, ok bool, err error) {
	var v string
	switch err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, clusterFactsReadKey(cluster)).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("read cluster facts' last read of %s: %w", cluster, translate(err))
	}
	read, err = strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("read cluster facts' last read of %s: %q: %w", cluster, v, err)
	}
	return read, true, nil
}
