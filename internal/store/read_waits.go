package store

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// MaxWaitRows bounds the job runs Waits reads: the newest starts first,
// so that a week of a very busy cluster is cut at its oldest end.
const MaxWaitRows = 200_000

// Wait is how long job runs asking for GPUs GPUs of one model waited
// from submit to start over a window: the median of Jobs runs.
type Wait struct {
	Model  string
	GPUs   int64
	Jobs   int
	Median time.Duration
}

// Waits is the median wait from submit to start of the job runs that
// started in [from, to), per GPU model (a run on several nodes: its
// first by name) and GPU count, by model then count. Only runs whose
// submit sacct gave count (ingest takes it when it reconciles a run);
// ignored runs do not. cut says MaxWaitRows was reached: the oldest
// starts were left out.
func (s *Ledger) Waits(ctx context.Context, from, to time.Time) (waits []Wait, cut bool, err error) {
	rows, err := s.db.QueryContext(ctx, `SELECT coalesce((SELECT min(n.model) FROM job_nodes n WHERE n.job = j.id), ''), j.gpus, j.start - j.submit
 FROM jobs j WHERE j.start >= ? AND j.start < ? AND j.submit IS NOT NULL AND j.start >= j.submit AND j.gpus > 0 AND j.ignored = 0
 ORDER BY j.start DESC LIMIT ?`, from.Unix(), to.Unix(), MaxWaitRows+1)
	type key struct {
		model string
		gpus  int64
	}
	byKey := map[key][]int64{}
	n := 0
	var k key
	var wait int64
	err = translate(eachRow(rows, err, func(r batchRows) error {
		if n++; n > MaxWaitRows {
			cut = true
			return nil
		}
		if err := r.Scan(&k.model, &k.gpus, &wait); err != nil {
			return err
		}
		byKey[k] = append(byKey[k], wait)
		return nil
	}))
	if err != nil {
		return nil, false, err
	}
	for k, ws := range byKey {
		waits = append(waits, Wait{Model: k.model, GPUs: k.gpus, Jobs: len(ws), Median: time.Duration(median(ws)) * time.Second})
	}
	slices.SortFunc(waits, func(a, b Wait) int { return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.GPUs, b.GPUs)) })
	return waits, cut, nil
}

// median is the middle of vs (the mean of the two middle ones, rounded
// down, for an even count); vs is sorted in place.
func median(vs []int64) int64 {
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}
