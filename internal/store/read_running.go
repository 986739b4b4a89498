package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// RunningQuery selects running job runs.
type RunningQuery struct {
	// Clusters keeps the runs of these clusters (none: every cluster).
	// It is applied before Limit, so that a scoped list is not emptied
	// by another cluster's newer runs.
	Clusters []string
	Limit    int
}

// RunningJobs lists at most q.Limit job runs that started and have not
// ended, newest first, ignored ones included: the dashboard shows what
// holds GPUs now, counted or not.
func (s *Ledger) RunningJobs(ctx context.Context, q RunningQuery) ([]JobRow, error) {
	var b strings.Builder
	args := make([]any, 0, len(q.Clusters)+1)
	b.WriteString(`SELECT ` + jobCols + ` FROM jobs j WHERE j.end IS NULL AND j.start IS NOT NULL`)
	inList(&b, &args, "j.cluster", q.Clusters)
	b.WriteString(` ORDER BY j.start DESC, j.id DESC LIMIT ?`)
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, b.String(), args...)
	var sc jobScan
	out, err := collect(rows, err, func(r batchRows, j *JobRow) error { return sc.scan(r, j) })
	return out, translate(err)
}

// NowGPURow is one GPU of a job run with the GPU's newest sample, kept
// only when it was taken during the run (a sample from before the start
// is another job's). Its JSON fields are /api/v1/jobs/running's.
type NowGPURow struct {
	Row   int64    `json:"-"` // the run: JobRow.Row
	Node  string   `json:"node"`
	Index *int64   `json:"index"`
	UUID  string   `json:"uuid"`
	Model string   `json:"model,omitempty"`
	Util  *float64 `json:"util_pct"` // nil: no sample during the run, or one without utilization
	AtMs  *int64   `json:"sampled_at_ms"`
}

// NowGPUs lists the GPUs of the runs rows (JobRow.Row; the caller bounds
// how many) with each GPU's newest sample, in no particular order.
func (s *Ledger) NowGPUs(ctx context.Context, rows []int64) ([]NowGPURow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var b strings.Builder
	args := make([]any, 0, len(rows))
	// Each GPU's newest pack comes with its row (the primary key's last
	// for the GPU), so that one query reads them all.
	b.WriteString(`SELECT jg.job, n.name, g.idx, g.uuid, g.model, g.id, j.start, p.data
 FROM job_gpus jg JOIN jobs j ON j.id = jg.job JOIN gpus g ON g.id = jg.gpu_id JOIN nodes n ON n.id = jg.node_id
 LEFT JOIN sample_packs p ON p.gpu_id = g.id AND p.t0_ms = (SELECT max(t0_ms) FROM sample_packs x WHERE x.gpu_id = g.id)
 WHERE 1 = 1`)
	inList(&b, &args, "jg.job", rows)
	type nowRow struct {
		NowGPURow
		gid   int64
		start sql.NullInt64
		pack  []byte
	}
	rs, err := s.db.QueryContext(ctx, b.String(), args...)
	got, err := collect(rs, err, func(r batchRows, g *nowRow) error {
		var idx sql.NullInt64
		err := r.Scan(&g.Row, &g.Node, &idx, &g.UUID, &g.Model, &g.gid, &g.start, &g.pack)
		g.Index = ptrInt(idx)
		return err
	})
	if err != nil {
		return nil, translate(err)
	}
	// A GPU of several runs has its pack decoded once.
	newest := map[int64]*sampleRow{}
	out := make([]NowGPURow, 0, len(got))
	for _, g := range got {
		r, ok := newest[g.gid]
		if !ok {
			if r, err = lastPacked(g.pack, g.gid); err != nil {
				return nil, err
			}
			newest[g.gid] = r
		}
		if r != nil && g.start.Valid && r.ints[colT] >= g.start.Int64*1000 {
			t := r.ints[colT]
			g.AtMs = &t
			if u, ok := r.num(colUtil); ok {
				f := float64(u)
				g.Util = &f
			}
		}
		out = append(out, g.NowGPURow)
	}
	return out, nil
}

// lastPacked is the last sample of GPU gid's pack data, nil when none.
func lastPacked(data []byte, gid int64) (*sampleRow, error) {
	var last *sampleRow
	err := eachPacked(data, gid, func(r *sampleRow) error {
		c := *r
		last = &c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("newest sample of gpu %d: %w", gid, err)
	}
	return last, nil
}

// LongestEndedJob is the longest run that has both a start and an end,
// in seconds (0 when none has): a run overlapping a window that begins
// at from started at from minus this at the earliest, unless it is
// still running.
func (s *Ledger) LongestEndedJob(ctx context.Context) (int64, error) {
	var l sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(end - start) FROM jobs WHERE end IS NOT NULL AND start IS NOT NULL`).Scan(&l); err != nil {
		return 0, translate(err)
	}
	return l.Int64, nil
}

// OldestOpenStart is the earliest start of a run without an end (Unix
// seconds), nil when every run has ended.
func (s *Ledger) OldestOpenStart(ctx context.Context) (*int64, error) {
	var open sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT min(start) FROM jobs WHERE end IS NULL`).Scan(&open); err != nil {
		return nil, translate(err)
	}
	return ptrInt(open), nil
}
