package store

// nodeRollupKey keys the node rollups (schema 20): rollup_hourly's row
// without its user and account. at is the Unix hour, the Unix day, or a
// month's first Unix day, as the table.
type nodeRollupKey struct {
	cluster, partition string
	node               int64
	model              string
	ignored            bool
	at                 int64
}

// nodeRollups sums a batch's rollup_hourly deltas into the node rollups'
// rows, so that each row is written once (PostgreSQL's statement over
// arrays takes each key once) and in first-seen order.
type nodeRollups struct {
	hours, days, months map[nodeRollupKey]*Usage
	order               [3][]nodeRollupKey
}

func newNodeRollups() *nodeRollups {
	return &nodeRollups{hours: map[nodeRollupKey]*Usage{}, days: map[nodeRollupKey]*Usage{}, months: map[nodeRollupKey]*Usage{}}
}

// add takes one rollup_hourly delta.
func (n *nodeRollups) add(dims Dims, node int64, model string, hour int64, d Usage) {
	k := nodeRollupKey{cluster: dims.Cluster, partition: dims.Partition, node: node, model: model, ignored: dims.Ignored}
	at := periodsOf(hour)
	for i, sums := range [3]map[nodeRollupKey]*Usage{n.hours, n.days, n.months} {
		k.at = at[i]
		u := sums[k]
		if u == nil {
			u = &Usage{}
			sums[k] = u
			n.order[i] = append(n.order[i], k)
		}
		u.Add(d)
	}
}

// write adds the sums to the node rollups in b.
func (n *nodeRollups) write(b *Batch) error {
	for i, sums := range [3]map[nodeRollupKey]*Usage{n.hours, n.days, n.months} {
		var rows [][]any
		for _, k := range n.order[i] {
			if d := *sums[k]; d != (Usage{}) {
				rows = append(rows, nodeRollupRow(k, d))
			}
		}
		if err := b.execMany(nodeRollupSQL(i), rows); err != nil {
			return err
		}
	}
	return nil
}

// nodeRollupTables are the node rollups and their time keys, in the
// order of periodsOf.
var nodeRollupTables = [3]struct{ table, key string }{{"rollup_node_hour", "hour"}, {"rollup_node_day", "day"}, {"rollup_node_month", "month"}}

// nodeRollupSQL adds a row's figures (nodeRollupRow) to node rollup i.
func nodeRollupSQL(i int) string {
	t := nodeRollupTables[i]
	return addUsageSQL(t.table, t.key+", cluster, partition, node_id, model, ignored")
}

func nodeRollupRow(k nodeRollupKey, d Usage) []any {
	return d.values(k.at, k.cluster, k.partition, k.node, k.model, k.ignored)
}

// periodsOf are the keys of Unix hour hour in the hour, day and month
// rollups: the hour, its Unix day, and its month's first Unix day.
func periodsOf(hour int64) [3]int64 {
	return [3]int64{hour, hour / 24, MonthOfDay(hour / 24)}
}

// rollupNode adds one rollup_hourly delta to the node rollups: a row
// each, without the batch's sums (nodeRollups) to build and drop.
func (b *Batch) rollupNode(dims Dims, node int64, model string, hour int64, d Usage) error {
	if d == (Usage{}) {
		return nil
	}
	k := nodeRollupKey{cluster: dims.Cluster, partition: dims.Partition, node: node, model: model, ignored: dims.Ignored}
	for i, at := range periodsOf(hour) {
		k.at = at
		if _, err := b.exec(nodeRollupSQL(i), nodeRollupRow(k, d)...); err != nil {
			return err
		}
	}
	return nil
}
