package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// NodeRollupsSchema is the first schema with the node rollups
// (rollup_node_hour, rollup_node_day, rollup_node_month).
const NodeRollupsSchema = 20

// NodeFacts calls fn for each row q selects from the node rollups: the
// rows Facts gives ByNode, without the user and account (empty), so q may
// not filter on them; Sum sums the range into one row a node. The row is
// reused, so fn copies what it keeps; once ctx is done, no further row
// (Facts).
func (s *Ledger) NodeFacts(ctx context.Context, q FactQuery, fn func(*FactRow)) error {
	if len(q.Users) > 0 || len(q.Accounts) > 0 {
		return errors.New("node rollups: they keep no user or account to filter on")
	}
	r := rollupOf[q.Grain]
	table, col, unit := r.nodeTable, r.col, r.unit
	var b strings.Builder
	var args []any
	if q.Sum {
		b.WriteString(`SELECT 0, cluster, partition, node_id, model, sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)`)
	} else {
		b.WriteString(`SELECT ` + col + `*` + strconv.FormatInt(unit, 10) + `, cluster, partition, node_id, model, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing`)
	}
	b.WriteString(` FROM ` + table + ` WHERE ignored = 0 AND ` + col + ` >= ? AND ` + col + ` < ?`)
	args = append(args, q.From/unit, q.To/unit)
	inList(&b, &args, "node_id", q.NodeIDs)
	inList(&b, &args, "cluster", q.Clusters)
	inList(&b, &args, "partition", q.Partitions)
	inList(&b, &args, "model", q.Models)
	if q.Sum {
		b.WriteString(" GROUP BY cluster, partition, node_id, model")
	}
	rows, err := s.db.QueryContext(ctx, b.String(), args...)
	var x FactRow
	return translate(eachRow(rows, err, func(r batchRows) error {
		if err := r.Scan(&x.Start, &x.Cluster, &x.Partition, &x.NodeID, &x.Model,
			&x.AllocS, &x.UsedS, &x.IdleS, &x.SampleS, &x.EnergyMJ, &x.Jobs, &x.Billing); err != nil {
			return err
		}
		if q.Sum {
			x.Start = q.From
		}
		fn(&x)
		return stopped(ctx)
	}))
}
