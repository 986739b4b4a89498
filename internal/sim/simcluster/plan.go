package simcluster

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/sim"
)

// Kind is what a job does with its GPUs.
type Kind int

// The job kinds of the mix.
const (
	// Busy trains: utilization between 60 and 100%, following a curve.
	Busy Kind = iota
	// Low runs a process that barely uses the GPU (2–25%).
	Low
	// Idle holds its GPUs without running anything on them (a forgotten
	// interactive session).
	Idle
	// Failing trains for a while, then hangs with its process at 0% until
	// it is killed and exits non-zero.
	Failing
)

func (k Kind) String() string {
	switch k {
	case Busy:
		return "busy"
	case Low:
		return "low"
	case Idle:
		return "idle"
	case Failing:
		return "failing"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// User is one user of the simulated cluster; the Slurm account is the
// team. Mix weighs the kinds of job the user runs (Busy, Low, Idle,
// Failing).
type User struct {
	Name    string
	UID     int
	Account string
	Mix     [4]int
}

// Users are the simulated cluster's users, four teams of two.
func Users() []User {
	return []User{
		{"alice", 1001, "vision", [4]int{75, 10, 5, 10}},
		{"bob", 1002, "vision", [4]int{55, 25, 10, 10}},
		{"carol", 1003, "nlp", [4]int{85, 5, 2, 8}},
		{"dave", 1004, "nlp", [4]int{30, 40, 20, 10}},
		{"erin", 1005, "robotics", [4]int{20, 20, 50, 10}},
		{"frank", 1006, "robotics", [4]int{50, 30, 10, 10}},
		{"grace", 1007, "bio", [4]int{60, 25, 5, 10}},
		{"heidi", 1008, "bio", [4]int{40, 30, 20, 10}},
	}
}

// Job is one simulated job on one node.
type Job struct {
	ID        uint64
	Node      string
	User      string
	UID       int
	Account   string
	Partition string
	// GPUs are the NVML indices, which are also the device minors that
	// Slurm hands the prolog.
	GPUs       []int
	Start, End time.Time
	Kind       Kind
	// Exit is SLURM_JOB_EXIT_CODE2 as the epilog sees it.
	Exit string

	// profiles[i] is what GPUs[i] does while the job holds it.
	profiles []*profile
}

// profile is a GPU's load as a pure function of the Unix second: the
// simulated GPU plays it and the ground truth is computed from it.
type profile struct {
	kind   Kind
	lo, hi float64
	period float64 // seconds
	phase  float64
	pid    uint32
	// hangAt is when a failing job's process stops using the GPU.
	hangAt int64
}

// unallocatedPowerMW is what a GPU nobody holds draws.
const unallocatedPowerMW = 70_000

// hungMemMiB is what a failing job's process holds once it hangs.
const hungMemMiB = 30_000

// runningMemMiB is what a job's process holds at a utilization.
func runningMemMiB(util uint32) uint64 { return 20_000 + uint64(util)*400 }

// hung says whether a failing job's process has stopped using the GPU
// by Unix second u.
func (p *profile) hung(u int64) bool { return p.kind == Failing && u >= p.hangAt }

// at is the load at Unix second u: utilization %, power mW, memory MiB
// and whether the job's process runs.
func (p *profile) at(u int64) (util, powerMW uint32, memMiB uint64, proc bool) {
	if p == nil {
		return 0, unallocatedPowerMW, 0, false
	}
	switch p.kind {
	case Idle:
		return 0, 72_000, 0, false
	}
	if p.hung(u) {
		return 0, 95_000, hungMemMiB, true
	}
	x := p.lo + (p.hi-p.lo)*(0.5+0.5*math.Sin(2*math.Pi*(float64(u)+p.phase)/p.period))
	util = uint32(math.Round(x))
	return util, 90_000 + 5_000*util, runningMemMiB(util), true
}

// workload is the profile as the simulated GPU plays it.
// The GPU integrates its energy second by second through it, so the
// process lists it can hold are made once, not at every second: one a
// utilization, the hung process's last (the simulated GPU copies the
// list it hands out).
func (p *profile) workload() sim.Workload {
	var procs []nvml.ProcessInfo
	if p != nil && p.kind != Idle {
		procs = make([]nvml.ProcessInfo, 0, 102)
		for u := range uint32(101) {
			procs = append(procs, nvml.ProcessInfo{Pid: p.pid, UsedGpuMemory: runningMemMiB(u) << 20})
		}
		procs = append(procs, nvml.ProcessInfo{Pid: p.pid, UsedGpuMemory: hungMemMiB << 20})
	}
	return func(t time.Time) sim.Load {
		u := t.Unix()
		util, power, mem, proc := p.at(u)
		l := sim.Load{GPUUtil: util, MemUtil: util / 2, MemUsedMiB: mem, PowerMW: power, TempC: 35 + util/3, SMClockMHz: 345 + 16*util}
		if proc {
			i := int(util)
			if p.hung(u) {
				i = len(procs) - 1
			}
			l.Procs = procs[i : i+1 : i+1]
		}
		return l
	}
}

// play programs d with the profile: a GPU nobody holds and an idle job's
// draw the same at every second, which d integrates at once (SetLoad).
func (p *profile) play(d *sim.Device) {
	w := p.workload()
	if p == nil || p.kind == Idle {
		d.SetLoad(w(time.Time{}))
		return
	}
	d.SetWorkload(w)
}

// fault is a lost GPU over [from, to) or, when to is 0, an energy counter
// reset (driver reload) at from.
type fault struct {
	gpu      int
	from, to int64
}

// nodePlan is everything that happens on one node.
type nodePlan struct {
	name   string
	jobs   []*Job
	faults []fault
	owner  map[uint32]uint64 // pid → job
}

// planNode schedules jobs on a node: they arrive at random, each wants
// 1–8 GPUs and runs on the GPUs free soonest, as the scheduler would
// start it. Then a few faults are placed.
func planNode(o *Options, n int, users []User) *nodePlan {
	rng := rand.New(rand.NewSource(o.Seed*1_000_003 + int64(n)))
	p := &nodePlan{name: NodeName(n)}
	iv := int64(o.Interval / time.Second)
	start, end := o.Start.Unix(), o.Start.Add(o.Duration).Unix()
	sizes := []int{1, 1, 1, 1, 2, 2, 4, 8}
	for i := range sizes {
		sizes[i] = min(sizes[i], o.GPUsPerNode)
	}
	meanGPUs := 0.0
	for _, s := range sizes {
		meanGPUs += float64(s)
	}
	meanGPUs /= float64(len(sizes))
	// mean run time for about 70% of the GPU time allocated
	meanDur := 0.7 * float64(o.GPUsPerNode) * o.Duration.Seconds() / (float64(o.JobsPerNode) * meanGPUs)
	gap := o.Duration.Seconds() / float64(o.JobsPerNode)
	free := make([]int64, o.GPUsPerNode)
	for g := range free {
		free[g] = start
	}
	arrival := float64(start)
	for {
		arrival += rng.ExpFloat64() * gap
		if int64(arrival) >= end {
			break
		}
		u := users[rng.Intn(len(users))]
		kind := Kind(pick(rng, u.Mix[:]))
		ngpu := sizes[rng.Intn(len(sizes))]
		order := make([]int, o.GPUsPerNode)
		for g := range order {
			order[g] = g
		}
		sort.SliceStable(order, func(a, b int) bool { return free[order[a]] < free[order[b]] })
		gpus := append([]int(nil), order[:ngpu]...)
		sort.Ints(gpus)
		s := int64(arrival) + int64(rng.Intn(20))
		for _, g := range gpus {
			s = max(s, free[g]+int64(rng.Intn(3)))
		}
		var dur int64
		switch kind {
		case Failing:
			dur = 120 + int64(rng.Intn(1500))
		default:
			dur = int64(60 + rng.ExpFloat64()*meanDur)
		}
		e := min(s+dur, end-int64(rng.Intn(int(min(iv, 60)))))
		// A job shorter than the interval may see no sample at all (the
		// agent then ships an aggregate without one, which ingest
		// quarantines): at long intervals such jobs are not simulated.
		if e-s < max(60, iv) {
			continue
		}
		for _, g := range gpus {
			free[g] = e
		}
		j := &Job{Node: p.name, User: u.Name, UID: u.UID, Account: u.Account, Partition: "gpu", GPUs: gpus,
			Start: time.Unix(s, 0).UTC(), End: time.Unix(e, 0).UTC(), Kind: kind, Exit: "0:0"}
		if e-s >= 4*3600 {
			j.Partition = "long"
		}
		if kind == Failing {
			j.Exit = "1:0"
		}
		period := float64(300 + rng.Intn(3000))
		for range gpus {
			pr := &profile{kind: kind, period: period, phase: float64(rng.Intn(3600))}
			switch kind {
			case Busy, Failing:
				pr.lo, pr.hi = float64(55+rng.Intn(25)), float64(90+rng.Intn(11))
			case Low:
				pr.lo, pr.hi = 2, float64(8+rng.Intn(18))
			}
			if kind == Failing {
				pr.hangAt = s + (e-s)*int64(30+rng.Intn(40))/100
			}
			j.profiles = append(j.profiles, pr)
		}
		p.jobs = append(p.jobs, j)
	}
	p.faults = placeFaults(o, rng, p.jobs, iv)
	return p
}

// pick returns an index with probability proportional to its weight.
func pick(rng *rand.Rand, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	r := rng.Intn(max(total, 1))
	for i, w := range weights {
		if r < w {
			return i
		}
		r -= w
	}
	return len(weights) - 1
}

// placeFaults puts about one lost GPU and one counter reset per
// o.FaultEvery on the node. A GPU is lost for 1–3 sample cycles in the
// middle of a job (never while a hook runs on it, and apart from other
// losses, shorter than agent.reinit_after so the agent keeps the GPU);
// a reset can happen at any time.
func placeFaults(o *Options, rng *rand.Rand, jobs []*Job, iv int64) []fault {
	if o.FaultEvery <= 0 {
		return nil
	}
	n := max(1, int(o.Duration/o.FaultEvery))
	start, end := o.Start.Unix(), o.Start.Add(o.Duration).Unix()
	reinit := int64(o.reinitAfter / time.Second)
	var out []fault
	for i := 0; i < n; i++ {
		for try := 0; try < 50 && len(jobs) > 0; try++ {
			j := jobs[rng.Intn(len(jobs))]
			c := int64(1 + rng.Intn(3))
			if (c-1)*iv >= reinit {
				c = 1
			}
			s, e := j.Start.Unix(), j.End.Unix()
			// the first lost sample instant, well inside the job
			k0 := (s-start)/iv + 3
			k1 := (e-start)/iv - c - 3
			if k1 <= k0 {
				continue
			}
			k := k0 + rng.Int63n(k1-k0)
			from := start + k*iv - rng.Int63n(iv)
			to := start + (k+c-1)*iv + 1 + rng.Int63n(iv)
			ok := from > s && to < e
			for _, f := range out {
				if f.to != 0 && from < f.to+reinit+2*iv && f.from < to+reinit+2*iv {
					ok = false
				}
			}
			if ok {
				out = append(out, fault{gpu: j.GPUs[rng.Intn(len(j.GPUs))], from: from, to: to})
				break
			}
		}
		// a counter reset, off the sample instants
		r := start + 1 + rng.Int63n(end-start-1)
		if (r-start)%iv == 0 {
			r++
		}
		g := rng.Intn(o.GPUsPerNode)
		clash := false
		for _, f := range out {
			if f.gpu == g && f.to != 0 && r >= f.from-iv && r < f.to+iv {
				clash = true
			}
		}
		if !clash && r < end {
			out = append(out, fault{gpu: g, from: r})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].from < out[b].from })
	return out
}
