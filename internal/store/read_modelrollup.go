package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// ModelFacts calls fn for each row q selects from rollup_model_hour: the
// hourly rows Facts gives, without the user, account and node (empty, 0),
// so q may not filter on them; a handful of rows an hour at any cluster
// size. Sum sums the range into one row a key (Start is From). The row is
// reused, so fn copies what it keeps.
func (s *Ledger) ModelFacts(ctx context.Context, q FactQuery, fn func(*FactRow)) error {
	switch {
	case q.Grain != Hourly:
		return errors.New("model rollups: they keep hours only")
	case len(q.Users)+len(q.Accounts)+len(q.NodeIDs) > 0:
		return errors.New("model rollups: they keep no user, account or node to filter on")
	}
	// A summed row's start is From itself, a number written in.
	start, figures, group := "hour*3600", "alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing", ""
	if q.Sum {
		start, group = strconv.FormatInt(q.From, 10), " GROUP BY cluster, partition, model"
		figures = "sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)"
	}
	var b strings.Builder
	b.WriteString(`SELECT ` + start + `, cluster, partition, model, ` + figures + ` FROM rollup_model_hour WHERE ignored = 0 AND hour >= ? AND hour < ?`)
	args := []any{q.From / 3600, q.To / 3600}
	for _, f := range []struct {
		col  string
		vals []string
	}{{"cluster", q.Clusters}, {"partition", q.Partitions}, {"model", q.Models}} {
		inList(&b, &args, f.col, f.vals)
	}
	rows, err := s.db.QueryContext(ctx, b.String()+group, args...)
	var x FactRow
	dest := []any{&x.Start, &x.Cluster, &x.Partition, &x.Model, &x.AllocS, &x.UsedS, &x.IdleS, &x.SampleS, &x.EnergyMJ, &x.Jobs, &x.Billing}
	return translate(eachRow(rows, err, func(r batchRows) error {
		err := r.Scan(dest...)
		if err == nil {
			fn(&x)
		}
		return err
	}))
}

// ModelRollupsSchema is the first schema with rollup_model_hour.
const ModelRollupsSchema = 25
