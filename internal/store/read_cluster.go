package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ClusterFactsIn are the events and reservations of clusters (all when
// empty) that overlap [from, to), for report cluster. More than
// MaxClusterFacts of either is an error: the window is too wide to read.
func (s *Ledger) ClusterFactsIn(ctx context.Context, clusters []string, from, to int64) (ClusterFacts, error) {
	out := ClusterFacts{From: from, To: to}
	var b strings.Builder
	args := []any{to, from}
	b.WriteString(`SELECT cluster, node, start, end, state, reason, gpus FROM slurm_events WHERE start < ? AND (end IS NULL OR end > ?)`)
	inList(&b, &args, "cluster", clusters)
	b.WriteString(` ORDER BY cluster, node, start LIMIT ?`)
	args = append(args, MaxClusterFacts+1)
	rows, err := translateRows(s.db.QueryContext(ctx, b.String(), args...))
	out.Events, err = collect(rows, err, func(r batchRows, e *SlurmEvent) error {
		var end sql.NullInt64
		var state int64
		err := r.Scan(&e.Cluster, &e.Node, &e.Start, &end, &state, &e.Reason, &e.GPUs)
		e.End, e.State = end.Int64, uint32(state)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("read slurm events: %w", err)
	}
	if len(out.Events) > MaxClusterFacts {
		return out, fmt.Errorf("read slurm events: more than %d in the window", MaxClusterFacts)
	}

	b.Reset()
	args = []any{to, from}
	b.WriteString(`SELECT cluster, id, start, end, name, flags, nodes, gpus FROM slurm_reservations WHERE start < ? AND end > ?`)
	inList(&b, &args, "cluster", clusters)
	b.WriteString(` ORDER BY cluster, start, id LIMIT ?`)
	args = append(args, MaxClusterFacts+1)
	rows, err = translateRows(s.db.QueryContext(ctx, b.String(), args...))
	out.Reservations, err = collect(rows, err, func(r batchRows, v *SlurmReservation) error {
		return r.Scan(&v.Cluster, &v.ID, &v.Start, &v.End, &v.Name, &v.Flags, &v.Nodes, &v.GPUs)
	})
	if err != nil {
		return out, fmt.Errorf("read slurm reservations: %w", err)
	}
	if len(out.Reservations) > MaxClusterFacts {
		return out, fmt.Errorf("read slurm reservations: more than %d in the window", MaxClusterFacts)
	}
	return out, nil
}

// HourAlloc is the GPU-seconds allocated to jobs in one hour of a
// cluster, ignored jobs included (their GPUs were taken all the same).
type HourAlloc struct {
	Hour    int64 // Unix seconds
	Cluster string
	AllocS  int64
}

// MaxHourAllocs bounds the cluster-hours report cluster reads.
const MaxHourAllocs = 5000000

// HourAllocs calls fn for each cluster's allocated GPU-seconds per hour in
// [from, to) (hour boundaries) of clusters (all when empty). sums reads
// rollup_hourly_sum, the same hours summed over the nodes (schema 11 on):
// a year of a 125-node cluster is 40× fewer rows.
func (s *Ledger) HourAllocs(ctx context.Context, clusters []string, from, to int64, sums bool, fn func(HourAlloc)) error {
	var b strings.Builder
	args := []any{from / 3600, to / 3600}
	table := "rollup_hourly"
	if sums {
		table = "rollup_hourly_sum"
	}
	b.WriteString(`SELECT hour*3600, cluster, sum(alloc_gpu_s) FROM ` + table + ` WHERE hour >= ? AND hour < ?`)
	inList(&b, &args, "cluster", clusters)
	b.WriteString(` GROUP BY hour, cluster LIMIT ?`)
	args = append(args, MaxHourAllocs+1)
	rows, err := translateRows(s.db.QueryContext(ctx, b.String(), args...))
	n := 0
	err = eachRow(rows, err, func(r batchRows) error {
		if n++; n > MaxHourAllocs {
			return fmt.Errorf("more than %d cluster-hours in the window", MaxHourAllocs)
		}
		var h HourAlloc
		if err := r.Scan(&h.Hour, &h.Cluster, &h.AllocS); err != nil {
			return err
		}
		fn(h)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read allocations by hour: %w", err)
	}
	return nil
}

// JobPart is one job's part on one node: GPUs from Start to End (0:
// still running).
type JobPart struct {
	Cluster, Node string
	Start, End    int64
	GPUs          int64
}

// MaxJobParts bounds the job parts one read returns.
const MaxJobParts = 1000000

// JobPartsIn are the job parts on cluster's nodes that overlap [from,
// to): report cluster counts the GPU-time jobs used inside a reservation
// from them.
func (s *Ledger) JobPartsIn(ctx context.Context, cluster string, nodes []string, from, to int64) ([]JobPart, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	var b strings.Builder
	args := []any{cluster, to, from}
	b.WriteString(`SELECT n.name, jn.start, coalesce(jn.end, 0), jn.gpus FROM job_nodes jn JOIN nodes n ON n.id = jn.node_id
 WHERE n.cluster = ? AND jn.start IS NOT NULL AND jn.start < ? AND (jn.end IS NULL OR jn.end > ?)`)
	inList(&b, &args, "n.name", nodes)
	b.WriteString(` ORDER BY n.name, jn.start LIMIT ?`)
	args = append(args, MaxJobParts+1)
	rows, err := translateRows(s.db.QueryContext(ctx, b.String(), args...))
	out, err := collect(rows, err, func(r batchRows, sp *JobPart) error {
		sp.Cluster = cluster
		return r.Scan(&sp.Node, &sp.Start, &sp.End, &sp.GPUs)
	})
	if err != nil {
		return nil, fmt.Errorf("read job parts on reserved nodes: %w", err)
	}
	if len(out) > MaxJobParts {
		return nil, fmt.Errorf("read job parts on reserved nodes: more than %d", MaxJobParts)
	}
	return out, nil
}
