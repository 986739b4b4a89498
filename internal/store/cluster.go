package store

import (
	"context"
	"database/sql"
	"fmt"
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
	From, To     int64
	Events       []SlurmEvent
	Reservations []SlurmReservation
}

// SetClusterFacts replaces the events and reservations that overlap
// [f.From, f.To] by those f lists: sacctmgr lists every one that overlaps
// its window, so an outage that ended takes its end, a reservation
// changed before it began loses its old times, and one deleted in Slurm
// goes. Writing the same facts twice changes nothing.
func (b *Batch) SetClusterFacts(f ClusterFacts) error {
	if len(f.Events) > MaxClusterFacts || len(f.Reservations) > MaxClusterFacts {
		return fmt.Errorf("store cluster facts: %d events and %d reservations, at most %d each", len(f.Events), len(f.Reservations), MaxClusterFacts)
	}
	if _, err := b.exec(`DELETE FROM slurm_events WHERE (end IS NULL OR end >= ?) AND start <= ?`, f.From, f.To); err != nil {
		return fmt.Errorf("store cluster facts: %w", err)
	}
	if _, err := b.exec(`DELETE FROM slurm_reservations WHERE end >= ? AND start <= ?`, f.From, f.To); err != nil {
		return fmt.Errorf("store cluster facts: %w", err)
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
	return nil
}

// ClusterFactsFrom is when events and reservations were last read (the
// pass that wrote them): the next read starts there. sacctmgr lists every
// fact that overlaps its window, an outage still open since long ago
// included, so the window need only reach back to the last read for
// what ended since. ok is false when nothing was read yet.
func (s *Store) ClusterFactsFrom(ctx context.Context) (from int64, ok bool, err error) {
	var events, resvs sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(seen) FROM slurm_events`).Scan(&events); err != nil {
		return 0, false, fmt.Errorf("read slurm events' last read: %w", translate(err))
	}
	if err := s.db.QueryRowContext(ctx, `SELECT max(seen) FROM slurm_reservations`).Scan(&resvs); err != nil {
		return 0, false, fmt.Errorf("read slurm reservations' last read: %w", translate(err))
	}
	for _, v := range []sql.NullInt64{events, resvs} {
		if v.Valid && (!ok || v.Int64 < from) {
			from, ok = v.Int64, true
		}
	}
	return from, ok, nil
}
