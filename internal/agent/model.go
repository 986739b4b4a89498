package agent

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurm"
)

// Alloc is one job's allocation on this node, learnt from its job_start
// event (spooled by the prolog, or announced on the hook socket).
type Alloc struct {
	Cluster string `json:"cluster"`
	Job     uint64 `json:"job"`
	Restart int    `json:"restart"`
	User    string `json:"user,omitempty"`
	// UID is the job owner's, from the prolog; it may profile the job.
	UID       *int64     `json:"uid,omitempty"`
	Account   string     `json:"account,omitempty"`
	Partition string     `json:"partition,omitempty"`
	Start     time.Time  `json:"start"`
	GPUs      []AllocGPU `json:"gpus"`
}

// AllocGPU is one allocated GPU with the prolog's energy reading.
type AllocGPU struct {
	UUID     string  `json:"uuid"`
	EnergyMJ *uint64 `json:"energy_mj,omitempty"`
}

func jobKey(job uint64, restart int) string {
	return strconv.FormatUint(job, 10) + "." + strconv.Itoa(restart)
}

// aggState is an aggregate with what folding needs beyond the record.
type aggState struct {
	record.JobGPU
	LastEnergy *uint64 `json:"last_energy_mj,omitempty"`
	LastShare  float64 `json:"last_share"`
	// Emitted is Samples when the aggregate was last spooled.
	Emitted  uint64 `json:"emitted"`
	Ended    bool   `json:"ended"`
	LastFile string `json:"last_file,omitempty"`
}

// owner finds the Slurm job of a process from its cgroup.
type owner func(pid uint32) (job uint64, err error)

// cgroupOwner reads /proc/PID/cgroup under procRoot.
func cgroupOwner(procRoot string) owner {
	return func(pid uint32) (uint64, error) {
		p := filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup")
		data, err := os.ReadFile(p)
		if err != nil {
			return 0, fmt.Errorf("read %q: %w", p, err)
		}
		return slurm.ParseCgroupJob(string(data)), nil
	}
}

// attribute turns one reading into a sample: which jobs the GPU belongs
// to, with what share, whether each is idle, and which processes are
// foreign. allocs are the allocations holding this GPU.
func attribute(r gpu.Reading, t time.Time, allocs []*Alloc, own owner, idleThreshold float64) record.Sample {
	s := record.Sample{
		Time: t, UUID: r.UUID, Index: r.Index,
		GPUUtil: r.GPUUtil, MemUtil: r.MemUtil, MemUsedMiB: r.MemUsedMiB, MemTotalMiB: r.MemTotalMiB,
		PowerMW: r.PowerMW, EnergyMJ: r.EnergyMJ, TempC: r.TempC, SMClockMHz: r.SMClockMHz,
		Throttle: r.Throttle, ECCErrors: r.ECCErrors, XIDErrors: r.XIDErrors, Metrics: r.Metrics,
	}
	if r.Parent != "" {
		s.SampleMIG = &record.SampleMIG{Parent: r.Parent}
	}
	if len(r.Missing) > 0 {
		s.Missing = append([]string(nil), r.Missing...)
	}
	migActivity(&s)
	allocated := map[uint64]bool{}
	for _, a := range allocs {
		allocated[a.Job] = true
	}
	// process memory per job, and whether a process of unknown owner runs
	memByJob := map[uint64]uint64{}
	unknown := false
	cgroupFailed := false
	for _, p := range r.Procs {
		pr := record.Proc{PID: p.Pid, MemUsedMiB: p.UsedGpuMemory >> 20}
		job, err := own(p.Pid)
		switch {
		case err != nil:
			pr.CgroupError = err.Error()
			unknown = true
			cgroupFailed = true
		case job == 0 || !allocated[job]:
			pr.Job = job
			pr.Foreign = true
		default:
			pr.Job = job
			memByJob[job] += pr.MemUsedMiB + 1 // +1: a process with no memory still counts
		}
		s.Procs = append(s.Procs, pr)
	}
	if cgroupFailed {
		s.Missing = append(s.Missing, "cgroup: unreadable")
	}
	if len(allocs) == 0 {
		return s
	}
	low := s.GPUUtil != nil && float64(*s.GPUUtil) < idleThreshold
	var total uint64
	for _, m := range memByJob {
		total += m
	}
	for _, a := range allocs {
		js := record.JobShare{Job: a.Job, Restart: a.Restart}
		switch {
		case len(allocs) == 1:
			js.Share = 1
			// a process whose cgroup could not be read is given the
			// benefit of the doubt on a GPU with a single job
			js.Idle = (r.ProcsOK && memByJob[a.Job] == 0 && !unknown) || low
		case total > 0:
			js.Share = float64(memByJob[a.Job]) / float64(total)
			js.Idle = memByJob[a.Job] == 0 || low
		default:
			js.Share = 1 / float64(len(allocs))
			js.Idle = r.ProcsOK && !unknown || low
		}
		s.Jobs = append(s.Jobs, js)
	}
	return s
}

// fold adds one sample to the aggregates of its jobs. mkAgg creates an
// aggregate the first time a job is seen on the GPU.
func fold(aggs map[string]*aggState, s *record.Sample, interval float64, cluster, node string, info func(job uint64, restart int) *Alloc, model string) {
	for _, js := range s.Jobs {
		key := record.JobGPUKey(cluster, js.Job, js.Restart, node, s.UUID)
		a := aggs[key]
		if a == nil {
			a = newAgg(cluster, node, js.Job, js.Restart, s.UUID, s.Index, model, info(js.Job, js.Restart))
			aggs[key] = a
		}
		// every sample is folded exactly once: live, or on replay of the
		// segment a crash left open (never folded into the checkpoint), so
		// no time-based de-duplication that a clock step would fool
		a.Index = s.Index
		if a.Model == "" {
			a.Model = model
		}
		if a.First.IsZero() || s.Time.Before(a.First) {
			a.First = s.Time
		}
		if s.Time.After(a.Last) {
			a.Last = s.Time
		}
		a.Samples++
		a.SampleSeconds += interval
		a.LastShare = js.Share
		if s.GPUUtil != nil {
			a.UtilSeconds += float64(*s.GPUUtil) / 100 * interval * js.Share
			if *s.GPUUtil > a.UtilMax {
				a.UtilMax = *s.GPUUtil
			}
		}
		var mem uint64
		if len(s.Jobs) == 1 && s.MemUsedMiB != nil {
			mem = *s.MemUsedMiB
		} else {
			for _, p := range s.Procs {
				if p.Job == js.Job {
					mem += p.MemUsedMiB
				}
			}
		}
		if mem > a.MemMaxMiB {
			a.MemMaxMiB = mem
		}
		if s.MemTotalMiB != nil {
			a.MemTotalMiB = *s.MemTotalMiB
		}
		if js.Idle {
			a.IdleSeconds += interval
		}
		if s.EnergyMJ != nil {
			share := js.Share
			if s.Parent() != "" {
				// a MIG instance: EnergyMJ is its parent's counter
				share *= s.ParentShare()
			}
			a.addEnergy(*s.EnergyMJ, share)
		}
		for _, m := range s.Missing {
			if a.Quality == nil {
				a.Quality = map[string]uint64{}
			}
			a.Quality[m]++
		}
	}
}

func newAgg(cluster, node string, job uint64, restart int, uuid string, index int, model string, al *Alloc) *aggState {
	a := &aggState{JobGPU: record.JobGPU{
		Schema: record.JobGPUSchema, Key: record.JobGPUKey(cluster, job, restart, node, uuid),
		Cluster: cluster, Node: node, Job: job, RestartCount: restart, UUID: uuid, Index: index, Model: model,
	}, LastShare: 1}
	if al != nil {
		a.User, a.Account, a.Partition = al.User, al.Account, al.Partition
		for _, g := range al.GPUs {
			if g.UUID == uuid && g.EnergyMJ != nil {
				e := *g.EnergyMJ
				a.LastEnergy = &e // the prolog's reading is the baseline
			}
		}
	}
	return a
}

// addEnergy adds the counter's progress since the last reading. A counter
// that fell to under half its last reading was reset (driver reload): the
// energy since the reset is its whole value. One a little lower is an older
// reading that arrived late (a cycle stamps its samples before it reads the
// counters, and an epilog reads them while the cycle runs): it adds
// nothing and the later reading stays the baseline. Taking it for a reset
// would add the counter's whole life, days of a GPU's energy.
func (a *aggState) addEnergy(e uint64, share float64) {
	if a.LastEnergy != nil {
		last := *a.LastEnergy
		delta := e
		switch {
		case e >= last:
			delta = e - last
		case e >= last/2:
			return
		default:
			if a.Quality == nil {
				a.Quality = map[string]uint64{}
			}
			a.Quality["energy_counter_reset"]++
		}
		a.EnergyMJ += uint64(math.Round(float64(delta) * share))
	}
	a.LastEnergy = &e
}

// record returns the aggregate as it is spooled.
func (a *aggState) record(seq uint64) record.JobGPU {
	r := a.JobGPU
	r.Seq = seq
	r.Final = a.Ended
	if a.Quality != nil {
		r.Quality = make(map[string]uint64, len(a.Quality))
		for k, v := range a.Quality {
			r.Quality[k] = v
		}
	}
	return r
}

// allocsByUUID indexes allocations by GPU, in a stable order.
func allocsByUUID(allocs map[string]*Alloc) map[string][]*Alloc {
	keys := make([]string, 0, len(allocs))
	for k := range allocs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	m := map[string][]*Alloc{}
	for _, k := range keys {
		a := allocs[k]
		for _, g := range a.GPUs {
			if g.UUID != "" {
				m[g.UUID] = append(m[g.UUID], a)
			}
		}
	}
	return m
}
