// Package gendata writes what a simulated cluster ships into
// <incoming>/<node>/ (job events through the real prolog/epilog code,
// sample segments and job × GPU aggregates from the record types) and the
// ground truth that an ingest of it must reproduce. Tests and benchmarks
// of the store use it.
package gendata

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	_ "github.com/aicloud/gpusuite/internal/sim/simulated" // the hooks open gpu.backend = "simulated"
	"github.com/aicloud/gpusuite/internal/sim/truth"
)

// Options size the simulated cluster.
type Options struct {
	Cluster     string
	Nodes       int
	GPUsPerNode int
	Model       string
	Start       time.Time
	Duration    time.Duration
	// Interval is the sampling interval; 0 writes no samples.
	Interval time.Duration
	// Segment is the time one segment file covers.
	Segment time.Duration
	// JobsPerNode is about how many jobs each node runs.
	JobsPerNode int
	// Aggregates writes one final jobgpu record per job × GPU.
	Aggregates bool
	// HookEvents writes events through hook.Run with a simulated getenv
	// and GPU; otherwise events are written from the record types.
	HookEvents bool
	// Open leaves this fraction of jobs without an end event (a lost epilog).
	Open float64
	Seed int64
}

// Job is one generated job run on one node.
type Job struct {
	ID        uint64
	Node      string
	User      string
	Account   string
	Partition string
	GPUs      []int // NVML indices (= minors here)
	Start     int64 // Unix seconds
	End       int64
	HasEnd    bool
	Util      uint32 // utilization while busy
}

// Truth is what an exact ingest must reproduce.
type Truth struct {
	Jobs      int
	AllocGPUS int64 // Σ GPUs × (end − start) over jobs with an end
	Samples   int
	// Used/Idle/SampleS sum samples attributed to jobs: Usage's UsedS,
	// IdleS, SampleS and EnergyMJ, as the oracle counts them.
	Used, Idle, SampleS float64
	EnergyMJ            int64
	Usage               truth.Usage
	PerAccount          map[string]int64 // allocated GPU-seconds
	JobList             []Job
	Files               int
}

var (
	users    = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	accounts = map[string]string{"alice": "physics", "bob": "physics", "carol": "bio", "dave": "bio", "erin": "cs", "frank": "cs", "grace": "chem", "heidi": "cs"}
	parts    = []string{"gpu", "gpu", "long"}
)

// NodeName is the name of node i.
func NodeName(i int) string { return fmt.Sprintf("gpu%03d", i+1) }

// Generate writes the cluster's files under incoming and returns the truth.
func Generate(incoming string, o Options) (Truth, error) {
	if o.Segment == 0 {
		o.Segment = 10 * time.Minute
	}
	if o.Model == "" {
		o.Model = "h100"
	}
	rng := rand.New(rand.NewSource(o.Seed))
	t := Truth{PerAccount: map[string]int64{}}
	start, end := o.Start.Unix(), o.Start.Add(o.Duration).Unix()
	nextID := uint64(1000)
	for n := 0; n < o.Nodes; n++ {
		node := NodeName(n)
		dir := filepath.Join(incoming, node)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return t, err
		}
		// GPUs in blocks, each running jobs back to back.
		blocks := gpuBlocks(rng, o.GPUsPerNode, []int{1, 2, 4})
		var jobs []Job
		mean := o.Duration.Seconds() * float64(len(blocks)) / float64(max(o.JobsPerNode, 1))
		for _, b := range blocks {
			cur := start + int64(rng.Intn(120))
			for {
				d := int64(mean*0.2 + rng.Float64()*mean*1.2)
				d = max(d, 30)
				if cur+d >= end {
					break
				}
				u := users[rng.Intn(len(users))]
				nextID++
				j := Job{ID: nextID*100 + uint64(n), Node: node, User: u, Account: accounts[u], Partition: parts[rng.Intn(len(parts))],
					GPUs: b, Start: cur, End: cur + d, HasEnd: rng.Float64() >= o.Open, Util: uint32(rng.Intn(101))}
				if rng.Intn(10) == 0 {
					j.Util = 0 // an idle job
				}
				jobs = append(jobs, j)
				cur += d + int64(5+rng.Intn(60))
			}
		}
		for _, j := range jobs {
			t.Jobs++
			if j.HasEnd {
				a := int64(len(j.GPUs)) * (j.End - j.Start)
				t.AllocGPUS += a
				t.PerAccount[j.Account] += a
			}
			if err := writeEvents(dir, o, j); err != nil {
				return t, err
			}
			t.Files++
			if j.HasEnd {
				t.Files++
			}
		}
		if err := dropRunMarks(dir); err != nil {
			return t, err
		}
		t.JobList = append(t.JobList, jobs...)
		if o.Interval > 0 {
			files, err := writeSamples(dir, o, node, jobs, &t)
			if err != nil {
				return t, err
			}
			t.Files += files
		}
	}
	t.Used, t.Idle, t.SampleS, t.EnergyMJ = t.Usage.UsedS, t.Usage.IdleS, t.Usage.SampleS, t.Usage.EnergyMJ
	return t, nil
}

// gpuBlocks cuts a node's gpus GPUs into blocks of consecutive indices,
// each of a size drawn from sizes, the last cut to the GPUs left: the
// GPUs that one job after another holds together.
func gpuBlocks(rng *rand.Rand, gpus int, sizes []int) [][]int {
	var blocks [][]int
	for i := 0; i < gpus; {
		size := min(sizes[rng.Intn(len(sizes))], gpus-i)
		b := make([]int, size)
		for k := range b {
			b[k] = i + k
		}
		blocks = append(blocks, b)
		i += size
	}
	return blocks
}

// env is the environment slurmd gives the prolog/epilog of j.
func env(o Options, j Job, kind record.Kind) func(string) string {
	gpus := ""
	for i, g := range j.GPUs {
		if i > 0 {
			gpus += ","
		}
		gpus += strconv.Itoa(g)
	}
	m := map[string]string{
		"SLURM_JOB_ID": strconv.FormatUint(j.ID, 10), "SLURM_JOB_USER": j.User, "SLURM_JOB_UID": "1000",
		"SLURM_JOB_GID": "1000", "SLURM_JOB_ACCOUNT": j.Account, "SLURM_JOB_PARTITION": j.Partition,
		"SLURMD_NODENAME": j.Node, "SLURM_CLUSTER_NAME": o.Cluster, "SLURM_JOB_GPUS": gpus,
		"CUDA_VISIBLE_DEVICES": gpus, "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
	}
	if kind == record.JobEnd {
		m["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
		m["SLURM_JOB_EXIT_CODE2"] = "0:0"
		m["SLURM_JOB_EXIT_CODE"] = "0"
	}
	return func(k string) string { return m[k] }
}

func writeEvents(dir string, o Options, j Job) error {
	kinds := []record.Kind{record.JobStart}
	if j.HasEnd {
		kinds = append(kinds, record.JobEnd)
	}
	for _, k := range kinds {
		at := time.Unix(j.Start, 0).UTC()
		if k == record.JobEnd {
			at = time.Unix(j.End, 0).UTC()
		}
		if o.HookEvents {
			cfg := config.Default()
			cfg.Spool.Dir = dir
			cfg.Cluster.Name = o.Cluster
			cfg.GPU.Backend = "simulated"
			cfg.GPU.Simulated.Count = o.GPUsPerNode
			cfg.GPU.Simulated.Model = o.Model
			now := func() time.Time { return at }
			srv, err := sim.New(sim.Options{Node: j.Node, Count: o.GPUsPerNode, Model: o.Model, Now: now})
			if err != nil {
				return fmt.Errorf("hook %s for job %d: %w", k, j.ID, err)
			}
			d := simcluster.HookDeps(now, "", srv)
			d.Getenv = env(o, j, k)
			if _, err := hook.Run(context.Background(), k, cfg, d, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
				return fmt.Errorf("hook %s for job %d: %w", k, j.ID, err)
			}
			continue
		}
		ev := record.Event{Schema: record.EventSchema, Kind: k, Time: at, Source: "prolog", Cluster: o.Cluster, Node: j.Node}
		uid, gid := int64(1000), int64(1000)
		ev.Job.ID, ev.Job.User, ev.Job.UID, ev.Job.GID = j.ID, j.User, &uid, &gid
		ev.Job.Account, ev.Job.Partition, ev.Job.Node, ev.Job.Cluster = j.Account, j.Partition, j.Node, o.Cluster
		ev.Job.GPUs = j.GPUs
		if k == record.JobEnd {
			ev.Source = "epilog"
			ev.Job.Exit = &record.Exit{}
		}
		for _, g := range j.GPUs {
			idx := g
			e := uint64(at.Unix()-1_700_000_000) * 70
			ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: sim.UUID(j.Node, g), Model: "NVIDIA H100 80GB HBM3", EnergyMJ: &e})
		}
		ev.Key = record.EventKey(o.Cluster, j.ID, 0, j.Node, k)
		data, err := json.Marshal(&ev)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, record.EventFileName(o.Cluster, j.ID, 0, j.Node, k)), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// utilAt is job j's utilization at t: its level, dipping every 7th sample.
func utilAt(j *Job, t int64) uint32 {
	if j.Util == 0 {
		return 0
	}
	if (t/10)%7 == 0 {
		return j.Util / 2
	}
	return j.Util
}

func writeSamples(dir string, o Options, node string, jobs []Job, t *Truth) (int, error) {
	// byGPU[g] lists the jobs on GPU g, in time order.
	byGPU := make([][]*Job, o.GPUsPerNode)
	for i := range jobs {
		for _, g := range jobs[i].GPUs {
			byGPU[g] = append(byGPU[g], &jobs[i])
		}
	}
	cursor := make([]int, o.GPUsPerNode)
	energy := make([]uint64, o.GPUsPerNode)
	seen := make([]bool, o.GPUsPerNode)
	for g := range energy {
		energy[g] = uint64(g+1) * 1_000_000
	}
	iv := o.Interval.Milliseconds()
	ivs := float64(iv) / 1000
	start, end := o.Start.UnixMilli(), o.Start.Add(o.Duration).UnixMilli()
	files := 0
	aggs := map[[2]uint64]*record.JobGPU{}
	var seq uint64
	for segStart := start; segStart < end; segStart += o.Segment.Milliseconds() {
		seq++
		name := record.SegmentFileName(o.Cluster, node, seq)
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return files, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		enc := json.NewEncoder(w)
		h := record.SegmentHeader{Schema: record.SegmentSchema, Key: record.SegmentKey(o.Cluster, node, seq), Cluster: o.Cluster,
			Node: node, Seq: seq, Interval: ivs, Start: time.UnixMilli(segStart).UTC()}
		if err := enc.Encode(&h); err != nil {
			return files, err
		}
		for ts := segStart; ts < min(segStart+o.Segment.Milliseconds(), end); ts += iv {
			sec := ts / 1000
			for g := 0; g < o.GPUsPerNode; g++ {
				var cur *Job
				for cursor[g] < len(byGPU[g]) && byGPU[g][cursor[g]].End <= sec {
					cursor[g]++
				}
				if cursor[g] < len(byGPU[g]) && byGPU[g][cursor[g]].Start <= sec {
					cur = byGPU[g][cursor[g]]
				}
				var util, power uint32 = 0, 70000
				if cur != nil {
					util = utilAt(cur, sec)
					power = 70000 + util*6000
				}
				de := uint64(power) * uint64(iv) / 1000
				energy[g] += de
				e := energy[g]
				mem := uint64(util) * 800
				s := record.Sample{Time: time.UnixMilli(ts).UTC(), UUID: sim.UUID(node, g), Index: g, GPUUtil: &util, PowerMW: &power, EnergyMJ: &e, MemUsedMiB: &mem}
				if cur != nil {
					s.Jobs = []record.JobShare{{Job: cur.ID, Share: 1, Idle: util < 1}}
					s.Procs = []record.Proc{{PID: uint32(1000 + g), MemUsedMiB: mem, Job: cur.ID}}
					smp := truth.Sample{T: ts, Interval: iv, Start: cur.Start * 1000, End: cur.End * 1000, HasEnd: cur.HasEnd,
						Util: util, Idle: util < 1, EnergyDelta: de, EnergyKnown: seen[g]}
					t.Usage.AddSample(smp)
					part := float64(smp.Part()) / 1000
					if o.Aggregates {
						k := [2]uint64{cur.ID, uint64(g)}
						a := aggs[k]
						if a == nil {
							a = &record.JobGPU{Schema: record.JobGPUSchema, Key: record.JobGPUKey(o.Cluster, cur.ID, 0, node, s.UUID), Seq: 1, Final: true,
								Cluster: o.Cluster, Node: node, Job: cur.ID, User: cur.User, Account: cur.Account, Partition: cur.Partition,
								UUID: s.UUID, Index: g, Model: "NVIDIA H100 80GB HBM3", First: s.Time, MemTotalMiB: 81559}
							aggs[k] = a
						}
						a.Last = s.Time
						a.Samples++
						a.SampleSeconds += part
						a.UtilSeconds += float64(util) * part / 100
						a.UtilMax = max(a.UtilMax, util)
						a.MemMaxMiB = max(a.MemMaxMiB, mem)
						a.EnergyMJ += de
						if util < 1 {
							a.IdleSeconds += part
						}
					}
				}
				seen[g] = true
				t.Samples++
				if err := enc.Encode(&s); err != nil {
					return files, err
				}
			}
		}
		if err := w.Flush(); err != nil {
			return files, err
		}
		if err := f.Close(); err != nil {
			return files, err
		}
		files++
	}
	for _, a := range aggs {
		data, err := json.Marshal(a)
		if err != nil {
			return files, err
		}
		if err := os.WriteFile(filepath.Join(dir, record.JobGPUFileName(o.Cluster, a.Job, 0, node, a.UUID, a.Seq)), data, 0o600); err != nil {
			return files, err
		}
		files++
	}
	return files, nil
}

// dropRunMarks takes the hooks' run marks out of a node's directory once
// its events are written: the hooks' spool here is the node's incoming
// directory, and on a real node the marks stay in the spool (the shipper
// ships records only), so they are taken away as shipping would.
func dropRunMarks(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, hook.RunMarksDir)); err != nil {
		return fmt.Errorf("drop the hooks' run notes: %w", err)
	}
	return nil
}
