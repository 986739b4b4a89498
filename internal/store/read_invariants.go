package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// HourViolation is a job hour whose used, idle or sampled GPU-seconds
// pass its allocated ones (issue #14's invariant: never).
type HourViolation struct {
	Cluster string
	JobID   uint64
	Restart int
	Node    string
	Hour    time.Time
	// Usage is the hour's allocated, used, idle and sampled GPU-seconds.
	Usage
}

func (v HourViolation) String() string {
	return fmt.Sprintf("job %d (restart %d) of %s on %s, hour %s: allocated %d GPU-s, used %.3f, idle %.3f, sampled %.3f",
		v.JobID, v.Restart, v.Cluster, v.Node, v.Hour.UTC().Format("2006-01-02 15h UTC"), v.AllocS, v.UsedS, v.IdleS, v.SampleS)
}

// overAllocated is the condition on job_hours h of a violation. The
// tolerance covers float sums of many sample parts (1e-6 s, and a
// billionth of the hour's allocation), never a real second. A job part
// whose start is still an estimate (no prolog: its end stands in until
// housekeeping finds Slurm's or the first sample's start) has no known
// allocation to be held to yet, so it is left out until then.
const overAllocated = `(h.used_gpu_s > h.alloc_gpu_s + 1e-6 + h.alloc_gpu_s * 1e-9
 OR h.idle_gpu_s > h.alloc_gpu_s + 1e-6 + h.alloc_gpu_s * 1e-9
 OR h.sample_s > h.alloc_gpu_s + 1e-6 + h.alloc_gpu_s * 1e-9)
 AND NOT EXISTS (SELECT 1 FROM job_nodes jn WHERE jn.job = h.job AND jn.node_id = h.node_id AND jn.start_estimated = 1)`

// violationChunk is how many job runs one query of HourViolations asks
// about.
const violationChunk = 500

// HourViolations returns up to limit of the given job hours that break
// the invariant, in key order. Each query asks about at most
// violationChunk job runs and the span of hours touched among them (the
// primary key's range), and returns at most limit rows.
func (s *Ledger) HourViolations(ctx context.Context, hours []JobHour, limit int) ([]HourViolation, error) {
	want := make(map[JobHour]bool, len(hours))
	// Each job run's first and last hour asked about.
	lo, hi := map[int64]int64{}, map[int64]int64{}
	var jobs []int64
	for _, h := range hours {
		want[h] = true
		if l, ok := lo[h.Job]; !ok {
			jobs = append(jobs, h.Job)
			lo[h.Job], hi[h.Job] = h.Hour, h.Hour
		} else {
			lo[h.Job], hi[h.Job] = min(l, h.Hour), max(hi[h.Job], h.Hour)
		}
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i] < jobs[j] })
	var out []HourViolation
	for i := 0; i < len(jobs) && len(out) < limit; i += violationChunk {
		chunk := jobs[i:min(i+violationChunk, len(jobs))]
		from, to := lo[chunk[0]], hi[chunk[0]]
		args := make([]any, 0, len(chunk)+3)
		for _, j := range chunk {
			args = append(args, j)
			from, to = min(from, lo[j]), max(to, hi[j])
		}
		args = append(args, from, to, limit)
		q := `SELECT h.job, h.node_id, h.hour, h.alloc_gpu_s, h.used_gpu_s, h.idle_gpu_s, h.sample_s, j.cluster, j.job_id, j.restart, n.name
 FROM job_hours h JOIN jobs j ON j.id = h.job JOIN nodes n ON n.id = h.node_id
 WHERE h.job IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + `) AND h.hour >= ? AND h.hour <= ? AND ` + overAllocated + `
 ORDER BY h.job, h.node_id, h.hour LIMIT ?`
		vs, err := s.violations(ctx, q, args, want)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out[:min(len(out), limit)], nil
}

// violations runs one query of HourViolations and keeps the rows of the
// job hours asked about.
func (s *Ledger) violations(ctx context.Context, q string, args []any, want map[JobHour]bool) ([]HourViolation, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	var out []HourViolation
	err = eachRow(rows, err, func(r batchRows) error {
		var k JobHour
		var v HourViolation
		var jid int64
		if err := r.Scan(&k.Job, &k.Node, &k.Hour, &v.AllocS, &v.UsedS, &v.IdleS, &v.SampleS, &v.Cluster, &jid, &v.Restart, &v.Node); err != nil {
			return err
		}
		if want[k] {
			v.JobID, v.Hour = uint64(jid), time.Unix(k.Hour*3600, 0).UTC()
			out = append(out, v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check job hours: %w", translate(err))
	}
	return out, nil
}

// CountHourViolations counts the job hours that break the invariant
// among those of the newest jobs job runs (by row: a range of the
// primary key, so that the read stays bounded on a ledger of years),
// reading at most limit of them: more reads as limit, and over is true.
func (s *Ledger) CountHourViolations(ctx context.Context, jobs, limit int) (n int64, over bool, err error) {
	q := `SELECT count(*) FROM (SELECT 1 FROM job_hours h
 WHERE h.job > (SELECT coalesce(max(id), 0) FROM jobs) - ? AND ` + overAllocated + ` LIMIT ?) AS bad`
	if err := s.db.QueryRowContext(ctx, q, jobs, limit+1).Scan(&n); err != nil {
		return 0, false, fmt.Errorf("count job hours over their allocation: %w", translate(err))
	}
	if n > int64(limit) {
		return int64(limit), true, nil
	}
	return n, false, nil
}
