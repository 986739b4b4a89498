package record

import "time"

// LiveSchema is the schema of a node's live-state file: the newest view of
// its GPUs, written by the node's agent each cycle and replaced whole.
const LiveSchema = "gpusuite.live/v1"

// Live is one node's GPUs as the agent last sampled them. It is a view,
// never accounting: the ledger counts from segments and aggregates only.
// A reader shows the node stale once Time + 3 × Interval has passed.
type Live struct {
	Schema  string    `json:"schema"`
	Cluster string    `json:"cluster"`
	Node    string    `json:"node"`
	Time    time.Time `json:"t"`
	// Interval is the agent's sampling interval in seconds.
	Interval float64   `json:"interval_s"`
	GPUs     []LiveGPU `json:"gpus"`
}

// LiveGPU is one GPU (or MIG device) of a Live. A nil pointer is a value
// NVML did not give; Missing says why (missing is never 0).
type LiveGPU struct {
	Index int `json:"index"`
	// Minor is the device minor (/dev/nvidiaN); nil when not known.
	Minor       *int       `json:"minor,omitempty"`
	UUID        string     `json:"uuid"`
	Model       string     `json:"model,omitempty"`
	Util        *uint32    `json:"util,omitempty"`
	MemUsedMiB  *uint64    `json:"mem_used_mib,omitempty"`
	MemTotalMiB *uint64    `json:"mem_total_mib,omitempty"`
	PowerMW     *uint32    `json:"power_mw,omitempty"`
	TempC       *uint32    `json:"temp_c,omitempty"`
	Jobs        []LiveJob  `json:"jobs,omitempty"`
	Procs       []LiveProc `json:"procs,omitempty"`
	Missing     []string   `json:"missing,omitempty"`
	// IdleSince is when the GPU, allocated, last went under the agent's
	// idle threshold and has stayed there; nil when it is not allocated
	// and idle now.
	IdleSince *time.Time `json:"idle_since,omitempty"`
}

// LiveJob is a job the GPU is allocated to.
type LiveJob struct {
	Job     uint64 `json:"job"`
	Restart int    `json:"restart"`
	User    string `json:"user,omitempty"`
	Account string `json:"account,omitempty"`
	// Start is when the job's allocation began on this node (its
	// prolog's announcement); zero when the agent does not know.
	Start time.Time `json:"start,omitzero"`
}

// LiveProc is one compute process on the GPU.
type LiveProc struct {
	PID uint32 `json:"pid"`
	// User is the process owner's name (its uid when the name is unknown).
	User string `json:"user,omitempty"`
	// Name is its command: argv[0]'s base name, at most 32 bytes of
	// printable UTF-8; empty from agents that predate it.
	Name string `json:"name,omitempty"`
	// Job is the Slurm job its cgroup names, 0 if none or unreadable.
	Job        uint64 `json:"job,omitempty"`
	MemUsedMiB uint64 `json:"mem_mib"`
	// Foreign is set when the process's job is not allocated this GPU.
	Foreign bool `json:"foreign,omitempty"`
}
