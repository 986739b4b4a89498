package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
)

// ExportJobSamples is ExportSamples for the samples of GPU g in
// [fromMs, toMs] that the agent gave Slurm job jobID's run restart: a
// sample of the GPU that names no job, or only others, is not the job's
// even inside its allocation, and the sample taken at its end is. Rows
// are the samples export's, as ExportSamples gives them.
func (s *Ledger) ExportJobSamples(ctx context.Context, node string, g GPURow, jobID int64, restart int, fromMs, toMs int64, fn func(vals []any) error) error {
	var vals []any
	to := toMs
	if to < math.MaxInt64 {
		to++ // the window is closed: [fromMs, toMs]
	}
	return s.eachSample(ctx, g.ID, fromMs, to, func(r *sampleRow) error {
		if list, ok := r.text(colJobs); ok {
			own, err := sharedWith(list, jobID, restart)
			if err != nil {
				return err
			}
			if !own {
				return nil
			}
		} else if j, _ := r.num(colJob); j != jobID {
			return nil
		} else if rs, _ := r.num(colRestart); rs != int64(restart) {
			return nil
		}
		vals = exportSampleVals(vals, node, g, r)
		return fn(vals)
	})
}

// sharedWith says whether a sample's jobs list (JSON, as stored) names
// the run.
func sharedWith(list any, jobID int64, restart int) (bool, error) {
	var raw []byte
	switch x := list.(type) {
	case string:
		raw = []byte(x)
	case []byte:
		raw = x
	default:
		return false, fmt.Errorf("sample jobs list of type %T", list)
	}
	var shares []struct {
		Job     int64 `json:"job"`
		Restart int   `json:"restart"`
	}
	if err := json.Unmarshal(raw, &shares); err != nil {
		return false, fmt.Errorf("sample jobs list %q: %w", raw, err)
	}
	for _, sh := range shares {
		if sh.Job == jobID && sh.Restart == restart {
			return true, nil
		}
	}
	return false, nil
}
