package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
	// Marks, when set, are written for each of Clusters: how far their
	// facts have been read (ClusterFactsMarks).
	Marks        *FactsMarks
	Events       []SlurmEvent
	Reservations []SlurmReservation
}

// FactsMarks say how far a cluster's facts have been read (Unix
// seconds): completely from Back to Read; a backfill goes on back to
// Until.
type FactsMarks struct {
	Read, Back, Until int64
}

// clusterFactsKey is the meta key of cluster's FactsMarks, kept as
// "read back until".
func clusterFactsKey(cluster string) string { return "slurm_facts_read." + cluster }

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
	if m := f.Marks; m != nil {
		for _, c := range f.Clusters {
			if _, err := b.exec(`INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
				clusterFactsKey(c), fmt.Sprintf("%d %d %d", m.Read, m.Back, m.Until)); err != nil {
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

// ClusterFactsMarks are how far cluster's facts were read (the Marks
// of the last SetClusterFacts that asked for it). They are the reads' own
// marks, not the facts' seen times, so they move on when Slurm lists no
// fact at all. ok is false when nothing was read yet.
func (s *Ledger) ClusterFactsMarks(ctx context.Context, cluster string) (m FactsMarks, ok bool, err error) {
	var v string
	switch err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, clusterFactsKey(cluster)).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return m, false, nil
	case err != nil:
		return m, false, fmt.Errorf("read cluster facts' marks of %s: %w", cluster, translate(err))
	}
	if _, err := fmt.Sscanf(v, "%d %d %d", &m.Read, &m.Back, &m.Until); err != nil {
		return FactsMarks{}, false, fmt.Errorf("read cluster facts' marks of %s: %q: %w", cluster, v, err)
	}
	return m, true, nil
}
