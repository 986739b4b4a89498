package store

import (
	"context"
	"database/sql"
	"fmt"
)

// HasMIG says whether the ledger holds a MIG instance: a site that cuts
// no GPU into slices is told nothing of slices (its outputs stay as they
// were). The gpus table is one row a GPU, and the scan stops at the first.
func (s *Ledger) HasMIG(ctx context.Context) (bool, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM gpus WHERE uuid LIKE 'MIG-%' LIMIT 1) AS m`).Scan(&n); err != nil {
		return false, fmt.Errorf("MIG instances: %w", translate(err))
	}
	return n > 0, nil
}

// OneGPURuns is, per given job run that holds one GPU or MIG slice, that
// GPU with its aggregate's figures (model, aggregate, sampled and used
// seconds, peaks, memory); a run of several GPUs or none is absent. It
// reads as JobGPUs does, for many runs at once: at most MaxResourceRows.
func (s *Ledger) OneGPURuns(ctx context.Context, rows []int64) (map[int64]JobGPURow, error) {
	type runGPU struct {
		row int64
		g   JobGPURow
	}
	got, err := readRuns(ctx, s, "GPUs", `SELECT jg.job, g.model, jg.agg_seq, jg.sample_s, jg.util_s, jg.util_max, jg.mem_max_mib, coalesce(jg.mem_total_mib, g.mem_total_mib)
 FROM job_gpus jg JOIN gpus g ON g.id = jg.gpu_id WHERE 1 = 1`, "jg.job", rows, func(r batchRows, v *runGPU) error {
		var seq sql.NullInt64
		var utilMax, memMax, memTotal sql.NullFloat64
		err := r.Scan(&v.row, &v.g.Model, &seq, &v.g.SampleS, &v.g.UtilS, &utilMax, &memMax, &memTotal)
		v.g.AggSeq, v.g.UtilMax, v.g.MemMaxMiB, v.g.MemTotalMiB = ptrInt(seq), ptrFloat(utilMax), ptrFloat(memMax), ptrFloat(memTotal)
		return err
	})
	if err != nil {
		return nil, err
	}
	out, several := map[int64]JobGPURow{}, map[int64]bool{}
	for _, v := range got {
		if _, ok := out[v.row]; ok {
			several[v.row] = true
		}
		out[v.row] = v.g
	}
	for r := range several {
		delete(out, r)
	}
	return out, nil
}
