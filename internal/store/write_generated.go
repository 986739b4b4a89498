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
	type periodKey struct {
		dims  Dims
		at    int64
		model string
	}
	type hourKey struct {
		periodKey
		node int64
	}
	hourly := map[hourKey]*Usage{}
	var hours []hourKey
	periods := [3]map[periodKey]*Usage{{}, {}, {}}
	var order [3][]periodKey
	nodes := newNodeRollups()
	for _, h := range hs {
		k := hourKey{periodKey{h.Dims, h.Hour, h.Model}, h.Node}
		if hourly[k] == nil {
			hourly[k] = &Usage{}
			hours = append(hours, k)
		}
		hourly[k].Add(h.Usage)
		for i, at := range []int64{h.Hour, h.Hour / 24, MonthOfDay(h.Hour / 24)} {
			pk := periodKey{h.Dims, at, h.Model}
			if periods[i][pk] == nil {
				periods[i][pk] = &Usage{}
				order[i] = append(order[i], pk)
			}
			periods[i][pk].Add(h.Usage)
		}
		nodes.add(h.Dims, h.Node, h.Model, h.Hour, h.Usage)
	}
	var rows [][]any
	for _, k := range hours {
		rows = append(rows, rollupHourRow(k.dims, k.node, k.model, k.at, *hourly[k]))
	}
	if err := b.execMany(rollupHourSQL(), rows); err != nil {
		return err
	}
	for i, t := range []struct{ table, key string }{{"rollup_hourly_sum", "hour"}, {"rollup_daily", "day"}, {"rollup_monthly", "month"}} {
		rows = rows[:0]
		for _, k := range order[i] {
			rows = append(rows, rollupPeriodRow(k.dims, k.model, k.at, *periods[i][k]))
		}
		if err := b.execMany(rollupPeriodSQL(t.table, t.key), rows); err != nil {
			return err
		}
	}
	return nodes.write(b)
}
