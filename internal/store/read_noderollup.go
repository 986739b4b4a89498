package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// NodeRollupsSchema is the first schema with the node rollups
// (rollup_node_hour, rollup_node_day, rollup_node_month).
const NodeRollupsSchema = 20

// NodeFacts calls fn for each row q selects from the node rollups: the
// rows Facts gives ByNode, without the user and account (empty), so q may
// not filter on them; without ByNode the nodes are summed away, and
// q.Keep may sum the partition or model away too; Sum sums the range into
// one row a key. The row is
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
	// By node, or summed over the nodes: the partitions' or models' rows
	// of a report by partition or model, a node's rows fewer than a user's.
	node := "0"
	if q.ByNode {
		node = "node_id"
	}
	part, pgroup, pall := keyCols(q, ColPartition)
	model, mgroup, mall := keyCols(q, ColModel)
	group := strings.Join(slices.DeleteFunc([]string{"cluster", pgroup, node, mgroup}, func(c string) bool { return c == "" || c == "0" }), ", ")
	grouped := q.Sum || !q.ByNode || !pall || !mall
	start := col + `*` + strconv.FormatInt(unit, 10)
	if q.Sum {
		start = "0"
	}
	b.WriteString(`SELECT ` + start + `, cluster, ` + part + `, ` + node + `, ` + model + `, ` + usageCols(grouped) +
		` FROM ` + table + ` WHERE ignored = 0 AND ` + col + ` >= ? AND ` + col + ` < ?`)
	args = append(args, q.From/unit, q.To/unit)
	inList(&b, &args, "node_id", q.NodeIDs)
	inList(&b, &args, "cluster", q.Clusters)
	inList(&b, &args, "partition", q.Partitions)
	inList(&b, &args, "model", q.Models)
	switch {
	case q.Sum:
		b.WriteString(" GROUP BY " + group)
	case grouped:
		b.WriteString(" GROUP BY " + col + ", " + group)
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
