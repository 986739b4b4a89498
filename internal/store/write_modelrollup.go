package store

// modelRollupKey keys rollup_model_hour (schema 25): rollup_node_hour's
// row without its node.
type modelRollupKey struct {
	cluster, partition, model string
	ignored                   bool
	hour                      int64
}

// modelRollupSQL adds a row's figures (modelRollupRow) to
// rollup_model_hour.
func modelRollupSQL() string {
	return addUsageSQL("rollup_model_hour", "hour, cluster, partition, model, ignored")
}

func modelRollupRow(k modelRollupKey, d Usage) []any {
	return d.values(k.hour, k.cluster, k.partition, k.model, k.ignored)
}

// modelRollups sums a batch's rollup_hourly deltas into
// rollup_model_hour's rows, as nodeRollups does the node rollups'.
type modelRollups struct{ usageSums[modelRollupKey] }

// add takes one rollup_hourly delta.
func (m *modelRollups) add(dims Dims, model string, hour int64, d Usage) {
	m.usageSums.add(modelRollupKey{cluster: dims.Cluster, partition: dims.Partition, model: model, ignored: dims.Ignored, hour: hour}, d)
}

// write adds the non-zero sums to rollup_model_hour in b.
func (m *modelRollups) write(b *Batch) error {
	return b.execMany(modelRollupSQL(), m.rows(true, modelRollupRow))
}

// rollupModel adds one rollup_hourly delta to rollup_model_hour: a row,
// without the batch's sums (modelRollups) to build and drop.
func (b *Batch) rollupModel(dims Dims, model string, hour int64, d Usage) error {
	if d == (Usage{}) {
		return nil
	}
	k := modelRollupKey{cluster: dims.Cluster, partition: dims.Partition, model: model, ignored: dims.Ignored, hour: hour}
	_, err := b.exec(modelRollupSQL(), modelRollupRow(k, d)...)
	return err
}
