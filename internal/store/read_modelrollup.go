package store

import (
	"context"
	"errors"
	"strings"
)

// ModelRollupsSchema is the first schema with rollup_model_hour.
const ModelRollupsSchema = 25

// ModelFacts calls fn for each row q selects from rollup_model_hour: the
// hourly rows Facts gives, without the user, account and node (empty, 0),
// so q may not filter on them; a handful of rows an hour at any cluster
// size. Sum sums the range into one row a key (Start is From). The row is
// reused, so fn copies what it keeps.
func (s *Ledger) ModelFacts(ctx context.Context, q FactQuery, fn func(*FactRow)) error {
	if q.Grain != Hourly {
		return errors.New("model rollups: they keep hours only")
	}
	if len(q.Users) > 0 || len(q.Accounts) > 0 || len(q.NodeIDs) > 0 {
		return errors.New("model rollups: they keep no user, account or node to filter on")
	}
	var b strings.Builder
	var args []any
	if q.Sum {
		b.WriteString(`SELECT 0, cluster, partition, model, sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)`)
	} else {
		b.WriteString(`SELECT hour*3600, cluster, partition, model, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing`)
	}
	b.WriteString(` FROM rollup_model_hour WHERE ignored = 0 AND hour >= ? AND hour < ?`)
	args = append(args, q.From/3600, q.To/3600)
	inList(&b, &args, "cluster", q.Clusters)
	inList(&b, &args, "partition", q.Partitions)
	inList(&b, &args, "model", q.Models)
	if q.Sum {
		b.WriteString(" GROUP BY cluster, partition, model")
	}
	rows, err := s.db.QueryContext(ctx, b.String(), args...)
	var x FactRow
	return translate(eachRow(rows, err, func(r batchRows) error {
		if err := r.Scan(&x.Start, &x.Cluster, &x.Partition, &x.Model,
			&x.AllocS, &x.UsedS, &x.IdleS, &x.SampleS, &x.EnergyMJ, &x.Jobs, &x.Billing); err != nil {
			return err
		}
		if q.Sum {
			x.Start = q.From
		}
		fn(&x)
		return nil
	}))
}
