package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// exportJobSamples is exportSamples narrowed to one job run's samples:
// its own (job and restart) and those it shared (a jobs list, checked
// here), with the list last so that it can be dropped.
const exportJobSamples = `SELECT ` + exportSampleCols + `, jobs FROM samples WHERE gpu_id = ? AND t_ms >= ? AND t_ms <= ? AND (job = ? AND restart = ? OR jobs IS NOT NULL) ORDER BY t_ms`

// ExportJobSamples is ExportSamples for the samples of GPU g in
// [fromMs, toMs] that the agent gave Slurm job jobID's run restart: a
// sample of the GPU that names no job, or only others, is not the job's
// even inside its allocation, and the sample taken at its end is. Rows
// are the samples export's, as ExportSamples gives them.
func (s *Ledger) ExportJobSamples(ctx context.Context, node string, g GPURow, jobID int64, restart int, fromMs, toMs int64, fn func(vals []any) error) error {
	return s.export(ctx, func(vals []any) error {
		last := len(vals) - 1
		if list := vals[last]; list != nil {
			own, err := sharedWith(list, jobID, restart)
			if err != nil {
				return err
			}
			if !own {
				return nil
			}
		}
		return fn(vals[:last])
	}, exportJobSamples, node, g.UUID, g.index(), g.ID, fromMs, toMs, jobID, restart)
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
