package store

import (
	"fmt"
	"time"
)

// Figure is a value Slurm's accounting may not have recorded: Known false
// reads "not recorded", which is never the same as a Value of 0 (a site
// with JobAcctGatherType=jobacct_gather/none records no CPU time or RSS).
type Figure struct {
	Value int64
	Known bool
}

// Known is a recorded figure.
func Known(v int64) Figure { return Figure{Value: v, Known: true} }

func (f Figure) arg() any {
	if !f.Known {
		return nil
	}
	return f.Value
}

// Resources is a finished job run's use of its allocation as sacct has it
// (job_resources): what the controller knows always, what the job accounting
// gather plugin measured when the site runs one.
type Resources struct {
	AllocCPUs int64         // AllocCPUS, over all nodes
	Nodes     int64         // NNodes
	Elapsed   time.Duration // ElapsedRaw, whole seconds
	// TimeLimit is in seconds; not known: UNLIMITED.
	TimeLimit Figure
	// ReqMem is the memory asked for, in bytes per node; not known: none.
	ReqMem Figure
	// TotalCPU is the user and system CPU time of every step, in
	// milliseconds.
	TotalCPU Figure
	// MaxRSS is the highest resident set of one task of any step, in
	// bytes.
	MaxRSS Figure
}

// SetResources stores the resources sacct gave for job run row, replacing what an
// earlier answer gave: like the times, Slurm's latest word counts.
func (b *Batch) SetResources(row int64, u Resources) error {
	if _, err := b.exec(`INSERT INTO job_resources (job, alloc_cpus, nodes, elapsed_s, time_limit_s, req_mem, total_cpu_ms, max_rss)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT(job) DO UPDATE SET alloc_cpus = excluded.alloc_cpus, nodes = excluded.nodes, elapsed_s = excluded.elapsed_s,
 time_limit_s = excluded.time_limit_s, req_mem = excluded.req_mem, total_cpu_ms = excluded.total_cpu_ms, max_rss = excluded.max_rss`,
		row, u.AllocCPUs, u.Nodes, int64(u.Elapsed/time.Second), u.TimeLimit.arg(), u.ReqMem.arg(), u.TotalCPU.arg(), u.MaxRSS.arg()); err != nil {
		return fmt.Errorf("resources of job row %d: %w", row, err)
	}
	return nil
}
