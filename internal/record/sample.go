package record

import (
	"fmt"
	"time"
)

// SegmentSchema is the schema of raw sample segment files.
const SegmentSchema = "gpusuite.samples/v1"

// JobGPUSchema is the schema of per job × GPU aggregates.
const JobGPUSchema = "gpusuite.jobgpu/v1"

// SegmentHeader is the first line of a segment file (JSON lines); every
// following line is one Sample.
type SegmentHeader struct {
	Schema  string `json:"schema"`
	Key     string `json:"key"`
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Seq numbers the node's segments; with Cluster and Node it names the
	// segment. It never repeats, across agent restarts too.
	Seq uint64 `json:"seq"`
	// Interval is the sampling interval in seconds.
	Interval float64   `json:"interval_s"`
	Start    time.Time `json:"start"`
	// Metrics are the catalogue metrics agent.metrics chose (beyond the
	// fixed fields); a sample's metrics object holds those of them its GPU
	// gave. Absent: the default set only.
	Metrics []string `json:"metrics,omitempty"`
	// Unsupported says, per GPU UUID, which chosen metrics the GPU cannot
	// give, as "metric: reason": said once here, not in every sample.
	Unsupported map[string][]string `json:"unsupported,omitempty"`
	// Profile is set on a segment of profile samples: one job's GPUs
	// sampled at a short interval (Interval) on request, in place of the
	// normal samples of those GPUs for that time.
	Profile *Profile `json:"profile,omitempty"`
}

// Profile says whose short-interval profile a segment holds.
type Profile struct {
	Job     uint64 `json:"job"`
	Restart int    `json:"restart"`
	// UID asked for it (root or the job's owner).
	UID uint32 `json:"uid"`
	// Start and End bound the profile as asked; its samples lie in [Start, End).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Sample is one reading of one GPU. A nil pointer is a value NVML could not
// give; Missing says why (invariant: missing is never 0).
type Sample struct {
	Time  time.Time `json:"t"`
	UUID  string    `json:"uuid"`
	Index int       `json:"index"`
	// SampleMIG is set on a MIG device's sample (UUID "MIG-..."); its
	// fields are the sample's in JSON. A pointer: a whole GPU's sample
	// is no bigger for it (ingest holds a segment's samples in memory).
	// Read it through Parent and ParentShare, which are nil-safe.
	*SampleMIG
	// Jobs are the jobs the GPU was allocated to at Time, each with its
	// share of the GPU (1 unless the GPU is shared); empty when none.
	Jobs        []JobShare `json:"jobs,omitempty"`
	GPUUtil     *uint32    `json:"gpu_util,omitempty"`
	MemUtil     *uint32    `json:"mem_util,omitempty"`
	MemUsedMiB  *uint64    `json:"mem_used_mib,omitempty"`
	MemTotalMiB *uint64    `json:"mem_total_mib,omitempty"`
	PowerMW     *uint32    `json:"power_mw,omitempty"`
	EnergyMJ    *uint64    `json:"energy_mj,omitempty"`
	TempC       *uint32    `json:"temp_c,omitempty"`
	SMClockMHz  *uint32    `json:"sm_clock_mhz,omitempty"`
	Throttle    *uint64    `json:"throttle,omitempty"`
	ECCErrors   *uint64    `json:"ecc_errors,omitempty"`
	XIDErrors   *uint64    `json:"xid_errors,omitempty"`
	// Metrics holds the chosen catalogue metrics (record.Catalogue) the
	// GPU gave, name → value; one it could not give this time is absent
	// and named in Missing, one it cannot give at all is named in the
	// segment header's Unsupported.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Procs   []Proc             `json:"procs,omitempty"`
	Missing []string           `json:"missing,omitempty"`
}

// SampleMIG is what a MIG device's sample says of its GPU.
type SampleMIG struct {
	// Parent is the UUID of the GPU the instance is part of.
	Parent string `json:"parent,omitempty"`
	// ParentShare is the part of the parent's power and energy that is
	// the instance's (by profile slice count, docs/agent.md); the
	// parent's own sample holds the readings. 0: not given.
	ParentShare float64 `json:"parent_share,omitempty"`
}

// Parent is the UUID of a MIG device's GPU, "" for a whole GPU.
func (s *Sample) Parent() string {
	if s.SampleMIG == nil {
		return ""
	}
	return s.SampleMIG.Parent
}

// ParentShare is a MIG device's share of its GPU's energy, 0 when not
// given.
func (s *Sample) ParentShare() float64 {
	if s.SampleMIG == nil {
		return 0
	}
	return s.SampleMIG.ParentShare
}

// JobShare attributes a sample to one job.
type JobShare struct {
	Job     uint64 `json:"job"`
	Restart int    `json:"restart"`
	// Share is the fraction of the GPU's utilization and energy that is
	// the job's: 1 for a whole GPU; split by process memory when jobs
	// share a GPU (sharding, MPS), so nothing is counted twice.
	Share float64 `json:"share"`
	// Idle is set when the job had no process on the GPU or utilization
	// was under the idle threshold.
	Idle bool `json:"idle,omitempty"`
}

// Proc is one compute process on a GPU.
type Proc struct {
	PID        uint32 `json:"pid"`
	MemUsedMiB uint64 `json:"mem_mib"`
	// Job is the Slurm job its cgroup names, 0 if none or unreadable.
	Job uint64 `json:"job,omitempty"`
	// Foreign is set when the process's job is not allocated this GPU.
	Foreign bool `json:"foreign,omitempty"`
	// CgroupError says why the process's cgroup could not be read.
	CgroupError string `json:"cgroup_error,omitempty"`
}

// JobGPU is the rolling aggregate of one job on one GPU. The agent writes
// it again as the job runs; a later record (higher Seq) of the same Key
// supersedes an earlier one, and Final marks the last.
type JobGPU struct {
	Schema       string    `json:"schema"`
	Key          string    `json:"key"`
	Seq          uint64    `json:"seq"`
	Final        bool      `json:"final"`
	Cluster      string    `json:"cluster"`
	Node         string    `json:"node"`
	Job          uint64    `json:"job"`
	RestartCount int       `json:"restart"`
	User         string    `json:"user,omitempty"`
	Account      string    `json:"account,omitempty"`
	Partition    string    `json:"partition,omitempty"`
	UUID         string    `json:"uuid"`
	Index        int       `json:"index"`
	Model        string    `json:"model,omitempty"`
	First        time.Time `json:"first"`
	Last         time.Time `json:"last"`
	// Samples counts readings; SampleSeconds is the time they cover.
	Samples       uint64  `json:"samples"`
	SampleSeconds float64 `json:"sample_s"`
	// UtilSeconds is Σ utilization/100 × interval × share.
	UtilSeconds float64 `json:"util_s"`
	UtilMax     uint32  `json:"util_max"`
	MemMaxMiB   uint64  `json:"mem_max_mib"`
	MemTotalMiB uint64  `json:"mem_total_mib,omitempty"`
	// EnergyMJ sums counter deltas × share, from the prolog's reading to
	// the epilog's where they are known, across counter resets.
	EnergyMJ    uint64  `json:"energy_mj"`
	IdleSeconds float64 `json:"idle_s"`
	// Quality counts samples with each kind of missing value
	// ("power: ERROR_NOT_SUPPORTED", "energy_counter_reset", ...).
	Quality map[string]uint64 `json:"quality,omitempty"`
}

// JobGPUKey is the deterministic key of a job × GPU aggregate.
func JobGPUKey(cluster string, job uint64, restart int, node, uuid string) string {
	return fmt.Sprintf("%s/%d/%d/%s/%s", cluster, job, restart, node, uuid)
}

// SegmentKey is the deterministic key of a raw sample segment.
func SegmentKey(cluster, node string, seq uint64) string {
	return fmt.Sprintf("%s/%s/%d", cluster, node, seq)
}
