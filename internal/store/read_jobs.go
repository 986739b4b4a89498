package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound means a read found no row for what it was asked.
var ErrNotFound = errors.New("not found")

// JobRow is one job run with its whole-run figures, as reports list it.
type JobRow struct {
	Row                      int64
	Cluster                  string
	JobID                    int64
	Restart                  int
	ArrayJobID, ArrayTaskID  *int64
	User, Account, Partition string
	Nodes                    string
	GPUs                     int64
	Start                    int64
	End                      *int64 // nil while it runs
	State                    string
	EndEstimated             bool
	Ignored                  bool
	IgnoreReason             *string
	// IgnoreBy and IgnoreAt (Unix seconds) are who made the last explicit
	// decision on whether the run counts (gpuacct ignore or unignore, the
	// dashboard's form) and when: nil when none was made, and in every
	// read but Run, which feeds a job's page.
	IgnoreBy *string
	IgnoreAt *int64
	// Usage is the run's GPU figures and billing; Jobs is 1 once its
	// start is counted.
	Usage
}

// ID is the job as Slurm users write it: 1234, 1234_7 for an array task,
// with "+N" for the Nth requeue.
func (j *JobRow) ID() string {
	s := strconv.FormatInt(j.JobID, 10)
	if j.ArrayJobID != nil && j.ArrayTaskID != nil && *j.ArrayJobID != j.JobID {
		s = fmt.Sprintf("%d_%d", *j.ArrayJobID, *j.ArrayTaskID)
	}
	if j.Restart > 0 {
		s += "+" + strconv.Itoa(j.Restart)
	}
	return s
}

// Reason is why the run is ignored, "" when it is not or none was given.
func (j *JobRow) Reason() string {
	if j.IgnoreReason == nil {
		return ""
	}
	return *j.IgnoreReason
}

// Elapsed is end − start, or now − start for a running job.
func (j *JobRow) Elapsed(now time.Time) int64 {
	if j.End != nil {
		return *j.End - j.Start
	}
	return max(0, now.Unix()-j.Start)
}

const jobCols = `j.id, j.cluster, j.job_id, j.restart, j.array_job_id, j.array_task_id, j.user, j.account, j.partition, j.nodes, j.gpus,
 j.start, j.end, j.state, j.end_estimated, j.ignored, j.ignore_reason, j.alloc_gpu_s, j.used_gpu_s, j.idle_gpu_s, j.energy_mj, j.billing,
 coalesce((SELECT sum(sample_s) FROM job_hours h WHERE h.job = j.id), 0), coalesce((SELECT sum(jobs) FROM job_hours h WHERE h.job = j.id), 0)`

// jobDetailCols are jobCols with a start that is never NULL: a ledger
// from before estimated starts may hold a job seen only through its end or
// its samples; its end (else 0) stands in rather than failing the scan.
// It adds the last decision's who and when (JobRow.IgnoreBy).
var jobDetailCols = strings.Replace(jobCols, "j.start,", "coalesce(j.start, j.end, 0),", 1) + `, j.ignore_by, j.ignore_at`

// jobScan scans jobCols into a JobRow.
type jobScan struct {
	arrayJob, arrayTask, end sql.NullInt64
	reason                   sql.NullString
}

// scan reads a row of jobCols into j, and the columns after them into more.
func (s *jobScan) scan(sc interface{ Scan(...any) error }, j *JobRow, more ...any) error {
	dest := []any{&j.Row, &j.Cluster, &j.JobID, &j.Restart, &s.arrayJob, &s.arrayTask, &j.User, &j.Account, &j.Partition, &j.Nodes, &j.GPUs,
		&j.Start, &s.end, &j.State, &j.EndEstimated, &j.Ignored, &s.reason, &j.AllocS, &j.UsedS, &j.IdleS, &j.EnergyMJ, &j.Billing, &j.SampleS, &j.Jobs}
	if err := sc.Scan(append(dest, more...)...); err != nil {
		return err
	}
	j.ArrayJobID, j.ArrayTaskID, j.End = ptrInt(s.arrayJob), ptrInt(s.arrayTask), ptrInt(s.end)
	j.IgnoreReason = nil
	if s.reason.Valid {
		r := s.reason.String
		j.IgnoreReason = &r
	}
	return nil
}

// Job orders.
const (
	JobsByStart = "start" // newest first
	JobsByAlloc = "alloc" // most GPU-seconds first
	JobsByEff   = "eff"   // least efficient first
	JobsByIdle  = "idle"  // most idle first
)

// JobsQuery selects the job runs that overlap [From, To) (Unix
// seconds). Empty lists select everything.
type JobsQuery struct {
	From, To int64
	// StartFrom, when not 0, also drops runs that started before it.
	// jobs_start bounds a start only from above, so without a lower bound
	// a rare filter reads every older run; a caller that knows the
	// longest run passes From minus it (or the oldest open run's start)
	// and reads only the window's share of the index.
	StartFrom int64
	// Ignored lists ignored runs instead of counted ones.
	Ignored                               bool
	Clusters, Users, Accounts, Partitions []string
	// NodeIDs and Models select runs with a part on one of them.
	NodeIDs []int64
	Models  []string
	// Sort is one of the Jobs* orders; "" is JobsByStart.
	Sort string
}

// Jobs calls fn for the runs q selects, in q.Sort order, until fn
// returns false: the caller bounds how many it reads. The row is reused.
func (s *Ledger) Jobs(ctx context.Context, q JobsQuery, fn func(*JobRow) bool) error {
	var b strings.Builder
	var args []any
	b.WriteString(`SELECT ` + jobCols + ` FROM jobs j WHERE j.start IS NOT NULL AND j.start < ? AND (j.end IS NULL OR j.end > ?)`)
	args = append(args, q.To, q.From)
	if q.StartFrom != 0 {
		b.WriteString(" AND j.start >= ?")
		args = append(args, q.StartFrom)
	}
	if q.Ignored {
		b.WriteString(" AND j.ignored = 1")
	} else {
		b.WriteString(" AND j.ignored = 0")
	}
	inList(&b, &args, "j.cluster", q.Clusters)
	inList(&b, &args, "j.user", q.Users)
	inList(&b, &args, "j.account", q.Accounts)
	inList(&b, &args, "j.partition", q.Partitions)
	if len(q.NodeIDs) > 0 {
		b.WriteString(" AND EXISTS (SELECT 1 FROM job_nodes n WHERE n.job = j.id")
		inList(&b, &args, "n.node_id", q.NodeIDs)
		b.WriteString(")")
	}
	if len(q.Models) > 0 {
		b.WriteString(" AND EXISTS (SELECT 1 FROM job_nodes n WHERE n.job = j.id")
		inList(&b, &args, "n.model", q.Models)
		b.WriteString(")")
	}
	switch q.Sort {
	case "", JobsByStart:
		b.WriteString(" ORDER BY j.start DESC, j.id DESC")
	case JobsByAlloc:
		b.WriteString(" ORDER BY j.alloc_gpu_s DESC, j.id")
	case JobsByEff:
		b.WriteString(" ORDER BY CASE WHEN j.alloc_gpu_s > 0 THEN j.used_gpu_s / j.alloc_gpu_s ELSE 1e9 END, j.alloc_gpu_s DESC, j.id")
	case JobsByIdle:
		b.WriteString(" ORDER BY j.idle_gpu_s DESC, j.id")
	default:
		return fmt.Errorf("job order %q is not start, alloc, eff or idle", q.Sort)
	}
	rows, err := s.db.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	var j JobRow
	var sc jobScan
	for rows.Next() {
		if err := sc.scan(rows, &j); err != nil {
			return translate(err)
		}
		if !fn(&j) {
			return nil
		}
	}
	return translate(rows.Err())
}

// RunQuery names one job run.
type RunQuery struct {
	JobID int64
	// Task, when set, makes JobID an array job id and picks its task.
	Task *int64
	// Clusters are the ledger's clusters, or the one asked for: naming
	// them lets SQLite use the jobs table's unique index, which starts
	// with the cluster, instead of scanning millions of rows.
	Clusters []string
	// Cluster, when set, is the only cluster searched.
	Cluster string
	// Restart is the run; -1 means the latest.
	Restart int
}

// Run reads one job run (its start never nil: its end, else 0, stands
// in); ErrNotFound when the ledger has no such run.
func (s *Ledger) Run(ctx context.Context, q RunQuery) (JobRow, error) {
	qs := `SELECT ` + jobDetailCols + ` FROM jobs j WHERE j.job_id = ?`
	args := []any{q.JobID}
	if q.Task != nil {
		qs = `SELECT ` + jobDetailCols + ` FROM jobs j WHERE (j.array_job_id = ? AND j.array_task_id = ?)`
		args = []any{q.JobID, *q.Task}
	}
	if q.Task == nil && len(q.Clusters) > 0 {
		var b strings.Builder
		inList(&b, &args, "j.cluster", q.Clusters)
		qs += b.String()
	} else if q.Cluster != "" {
		qs += " AND j.cluster = ?"
		args = append(args, q.Cluster)
	}
	if q.Restart >= 0 {
		qs += " AND j.restart = ?"
		args = append(args, q.Restart)
	}
	// The newest run: a run without a start last and the newest row
	// among equals, on both engines (PostgreSQL puts NULLs first in a
	// descending order, SQLite last).
	qs += " ORDER BY j.restart DESC, j.start DESC NULLS LAST, j.id DESC LIMIT 1"
	var j JobRow
	var sc jobScan
	var by sql.NullString
	var at sql.NullInt64
	if err := sc.scan(s.db.QueryRowContext(ctx, qs, args...), &j, &by, &at); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return JobRow{}, ErrNotFound
		}
		return JobRow{}, translate(err)
	}
	if by.Valid {
		j.IgnoreBy = &by.String
	}
	j.IgnoreAt = ptrInt(at)
	return j, nil
}

// JobNodeRow is a job run's part on one node; its JSON fields are
// gpuacct job --json's node_parts (the node named by its caller).
type JobNodeRow struct {
	NodeID       int64  `json:"-"`
	GPUs         int64  `json:"gpus"`
	Model        string `json:"model,omitempty"`
	Start        *int64 `json:"start,omitempty"`
	End          *int64 `json:"end,omitempty"`
	EndSource    string `json:"end_source,omitempty"` // "" when unknown
	EndEstimated bool   `json:"end_estimated"`
	ExitCode     *int64 `json:"exit_code,omitempty"`
	Quality      string `json:"quality,omitempty"`
}

// JobNodes lists a run's parts (row: JobRow.Row) by node id; a run has
// one a node it ran on.
func (s *Ledger) JobNodes(ctx context.Context, row int64) ([]JobNodeRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT node_id, gpus, model, start, end, end_source, end_estimated, exit_code, quality
 FROM job_nodes WHERE job = ? ORDER BY node_id`, row)
	out, err := collect(rows, err, func(r batchRows, p *JobNodeRow) error {
		var start, end, code sql.NullInt64
		var src sql.NullString
		err := r.Scan(&p.NodeID, &p.GPUs, &p.Model, &start, &end, &src, &p.EndEstimated, &code, &p.Quality)
		p.Start, p.End, p.EndSource, p.ExitCode = ptrInt(start), ptrInt(end), src.String, ptrInt(code)
		return err
	})
	return out, translate(err)
}

// JobGPURow is one GPU of a job run with the agent's aggregate of it
// (AggSeq nil: none arrived).
type JobGPURow struct {
	GPUID, NodeID                        int64
	Index, Minor                         *int64
	UUID, Model                          string
	AggSeq                               *int64
	AggFinal                             bool
	SampleS, UtilS                       float64
	UtilMax, MemMaxMiB, MemTotalMiB      *float64
	EnergyMJ, EnergyStartMJ, EnergyEndMJ *int64
	IdleS                                float64
	Quality                              string // JSON: kind -> samples missing it
}

// JobGPUs lists a run's GPUs by node, index and uuid.
func (s *Ledger) JobGPUs(ctx context.Context, row int64) ([]JobGPURow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT g.id, jg.node_id, g.idx, jg.minor, g.uuid, g.model, jg.agg_seq, jg.agg_final, jg.sample_s, jg.util_s,
 jg.util_max, jg.mem_max_mib, coalesce(jg.mem_total_mib, g.mem_total_mib), jg.energy_mj, jg.energy_start_mj, jg.energy_end_mj, jg.idle_s, jg.quality
 FROM job_gpus jg JOIN gpus g ON g.id = jg.gpu_id WHERE jg.job = ? ORDER BY jg.node_id, g.idx NULLS FIRST, g.uuid`, row)
	out, err := collect(rows, err, func(r batchRows, g *JobGPURow) error {
		var idx, minor, seq, energy, eStart, eEnd sql.NullInt64
		var utilMax, memMax, memTotal sql.NullFloat64
		err := r.Scan(&g.GPUID, &g.NodeID, &idx, &minor, &g.UUID, &g.Model, &seq, &g.AggFinal, &g.SampleS, &g.UtilS, &utilMax, &memMax, &memTotal,
			&energy, &eStart, &eEnd, &g.IdleS, &g.Quality)
		g.Index, g.Minor, g.AggSeq = ptrInt(idx), ptrInt(minor), ptrInt(seq)
		g.UtilMax, g.MemMaxMiB, g.MemTotalMiB = ptrFloat(utilMax), ptrFloat(memMax), ptrFloat(memTotal)
		g.EnergyMJ, g.EnergyStartMJ, g.EnergyEndMJ = ptrInt(energy), ptrInt(eStart), ptrInt(eEnd)
		return err
	})
	return out, translate(err)
}
