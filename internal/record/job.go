package record

// The job and GPU as an event records them. They are record's own types:
// slurm's parser fills a Job in place and gpu's Identity is a GPU, so only
// an edit here changes the schema (docs/records.md).

// MaxRestartCount is the largest restart count a job can have: Slurm
// counts requeues in 16 bits.
const MaxRestartCount = 1<<16 - 1

// MaxID is the largest uid or gid a job can have: (uid_t)-1 and Slurm's
// NO_VAL (0xfffffffe) mean none.
const MaxID = 1<<32 - 3

// Job is one job as a node-side hook saw it. Fields slurmd did not set are
// zero; the event's Quality says which were missing or invalid.
type Job struct {
	ID           uint64 `json:"id"`
	ArrayJobID   uint64 `json:"array_job_id,omitempty"`
	ArrayTaskID  *int64 `json:"array_task_id,omitempty"`
	RestartCount int    `json:"restart_count"`
	User         string `json:"user,omitempty"`
	UID          *int64 `json:"uid,omitempty"`
	GID          *int64 `json:"gid,omitempty"`
	Account      string `json:"account,omitempty"`
	Partition    string `json:"partition,omitempty"`
	Node         string `json:"node,omitempty"`
	Cluster      string `json:"cluster,omitempty"`
	// GPUs are gres.conf device minor numbers, not NVML indices.
	GPUs []int `json:"gpus"`
	// CUDAVisibleDevices is kept as given: it may hold indices or UUIDs.
	CUDAVisibleDevices string `json:"cuda_visible_devices,omitempty"`
	// Context is slurmd's SLURM_SCRIPT_CONTEXT (prolog_slurmd, epilog_slurmd).
	Context string `json:"context,omitempty"`
	// Exit is set only by the epilog.
	Exit *Exit `json:"exit,omitempty"`
}

// Exit is how a job ended.
type Exit struct {
	// Code is the job's exit status (SLURM_JOB_EXIT_CODE2's first part).
	Code int `json:"code"`
	// Signal is the signal that ended it, 0 if none.
	Signal int `json:"signal"`
	// Raw is SLURM_JOB_EXIT_CODE, the wait(2) status.
	Raw *int64 `json:"raw,omitempty"`
	// Derived is SLURM_JOB_DERIVED_EC, the highest exit code of any step.
	Derived *int64 `json:"derived,omitempty"`
}

// GPU is one GPU allocated to a job, identified through NVML by its minor.
type GPU struct {
	Minor int    `json:"minor"`
	Index *int   `json:"index,omitempty"`
	UUID  string `json:"uuid,omitempty"`
	Model string `json:"model,omitempty"`
	// EnergyMJ is NVML's total energy counter in millijoules.
	EnergyMJ *uint64 `json:"energy_mj,omitempty"`
	// Missing lists what could not be read, each with its reason.
	Missing []string `json:"missing,omitempty"`
	// A MIG slice (docs/agent.md): Minor and Index are the parent's,
	// Parent its UUID, Profile Slurm's gres type (1g.10gb), GI and CI the
	// instance's ids; UUID is the instance's MIG UUID once read. Unmapped
	// says why the slice could not be followed to its instance.
	Parent   string `json:"parent,omitempty"`
	Profile  string `json:"profile,omitempty"`
	GI       *int   `json:"gpu_instance,omitempty"`
	CI       *int   `json:"compute_instance,omitempty"`
	Unmapped string `json:"unmapped,omitempty"`
}
