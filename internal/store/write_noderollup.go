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
	for i, p := range []struct {
		sums map[nodeRollupKey]*Usage
		at   int64
	}{{n.hours, hour}, {n.days, hour / 24}, {n.months, MonthOfDay(hour / 24)}} {
		k.at = p.at
		u := p.sums[k]
		if u == nil {
			u = &Usage{}
			p.sums[k] = u
			n.order[i] = append(n.order[i], k)
		}
		u.Add(d)
	}
}

// write adds the sums to the node rollups in b.
func (n *nodeRollups) write(b *Batch) error {
	for i, t := range []struct {
		table, key string
		sums       map[nodeRollupKey]*Usage
	}{{"rollup_node_hour", "hour", n.hours}, {"rollup_node_day", "day", n.days}, {"rollup_node_month", "month", n.months}} {
		var rows [][]any
		for _, k := range n.order[i] {
			if d := *t.sums[k]; d != (Usage{}) {
				rows = append(rows, d.values(k.at, k.cluster, k.partition, k.node, k.model, k.ignored))
			}
		}
		if err := b.execMany(addUsageSQL(t.table, t.key+", cluster, partition, node_id, model, ignored"), rows); err != nil {
			return err
		}
	}
	return nil
}

// rollupNode adds one rollup_hourly delta to the node rollups.
func (b *Batch) rollupNode(dims Dims, node int64, model string, hour int64, d Usage) error {
	n := newNodeRollups()
	n.add(dims, node, model, hour, d)
	return n.write(b)
}
