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

// usageSums sums usage by key and keeps the keys in first-seen order, so
// that each row of a table is written once (PostgreSQL's statement over
// arrays takes each key once). The zero value is ready.
type usageSums[K comparable] struct {
	sums  map[K]*Usage
	order []K
}

func (s *usageSums[K]) add(k K, d Usage) {
	u := s.sums[k]
	if u == nil {
		if s.sums == nil {
			s.sums = map[K]*Usage{}
		}
		u = &Usage{}
		s.sums[k] = u
		s.order = append(s.order, k)
	}
	u.Add(d)
}

// rows are row of each key and its sum, in order; zero sums too unless
// skipZero.
func (s *usageSums[K]) rows(skipZero bool, row func(K, Usage) []any) [][]any {
	var rows [][]any
	for _, k := range s.order {
		if d := *s.sums[k]; !skipZero || d != (Usage{}) {
			rows = append(rows, row(k, d))
		}
	}
	return rows
}

// nodeRollups sums a batch's rollup_hourly deltas into the node rollups'
// rows (periodsOf's order).
type nodeRollups [3]usageSums[nodeRollupKey]

// add takes one rollup_hourly delta.
func (n *nodeRollups) add(dims Dims, node int64, model string, hour int64, d Usage) {
	k := nodeRollupKey{cluster: dims.Cluster, partition: dims.Partition, node: node, model: model, ignored: dims.Ignored}
	for i, at := range periodsOf(hour) {
		k.at = at
		n[i].add(k, d)
	}
}

// write adds the non-zero sums to the node rollups in b.
func (n *nodeRollups) write(b *Batch) error {
	for i := range n {
		if err := b.execMany(nodeRollupSQL(i), n[i].rows(true, nodeRollupRow)); err != nil {
			return err
		}
	}
	return nil
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
