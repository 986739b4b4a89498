package store

// RollupHour is one (dims, node, model, hour) of usage given to
// AddRollupHours.
type RollupHour struct {
	Dims
	Node  int64 // nodes.id (Batch.Node)
	Model string
	Hour  int64 // Unix hour
	Usage
}

// AddRollupHours adds usage to every rollup without jobs behind it: a
// generated ledger's years (bench/scale), where ingesting a year of job
// records at 10,000 GPUs would take hours. Nothing ingest does calls it;
// the job hours and job totals stay empty. Each table's rows are summed
// first and written once a call, so a call should cover all nodes of a
// stretch of time (a day).
func (b *Batch) AddRollupHours(hs []RollupHour) error {
	type hourKey struct {
		periodKey
		node int64
	}
	var hourly usageSums[hourKey]
	var periods [3]usageSums[periodKey]
	var nodes nodeRollups
	var models modelRollups
	for _, h := range hs {
		hourly.add(hourKey{periodKey{h.Dims, h.Hour, h.Model}, h.Node}, h.Usage)
		for i, at := range periodsOf(h.Hour) {
			periods[i].add(periodKey{h.Dims, at, h.Model}, h.Usage)
		}
		nodes.add(h.Dims, h.Node, h.Model, h.Hour, h.Usage)
		models.add(h.Dims, h.Model, h.Hour, h.Usage)
	}
	if err := b.execMany(rollupHourSQL(), hourly.rows(false, func(k hourKey, d Usage) []any {
		return rollupHourRow(k.dims, k.node, k.model, k.at, d)
	})); err != nil {
		return err
	}
	if err := b.writePeriods(&periods, false); err != nil {
		return err
	}
	if err := nodes.write(b); err != nil {
		return err
	}
	return models.write(b)
}
