// Package simcluster runs a simulated GPU cluster through the real
// per-node code: on every node the real agent (internal/agent) samples
// simulated GPUs (internal/sim) on an injected clock, the real
// prolog/epilog code (internal/hook) records each job's start and end in
// the node's spool, and the agent ships everything into
// <incoming>/<node>/ exactly as in production. Jobs of a mix of users
// and teams are busy, barely used, idle or failing; now and then a GPU is
// lost for a few cycles or its energy counter is reset. Nothing sleeps: a
// simulated day of 16 nodes takes seconds.
//
// Run returns the ground truth computed from the workload definitions
// alone, so that a test can hold what ingest and the reports make of the
// shipped records against it.
//
// Files: simcluster.go (options, the run, its result), plan.go (the jobs
// each node runs), live.go (a node's config and its hooks run in
// process), truth.go (the ground truth of the plan).
package simcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	_ "github.com/aicloud/gpusuite/internal/sim/simulated" // nodes open gpu.backend = "simulated"
)

// Options describe the simulated cluster and where its files go.
type Options struct {
	Cluster     string
	Nodes       int
	GPUsPerNode int
	// Model is a simulated model (sim.Models); default h100.
	Model string
	// Start is when the simulation begins (whole seconds); Duration how
	// long it runs (a whole number of intervals).
	Start    time.Time
	Duration time.Duration
	// Interval is agent.interval (default, as in production, 10 s);
	// Segment agent.segment_duration (default 5 min); Ship
	// agent.ship_interval (default 30 s).
	Interval, Segment, Ship time.Duration
	// JobsPerNode is about how many jobs each node runs.
	JobsPerNode int
	// FaultEvery places, per node, about one lost GPU and one energy
	// counter reset per this much simulated time; 0: none.
	FaultEvery time.Duration
	Seed       int64
	// NodeRoot holds each node's local directories
	// (<NodeRoot>/<node>/spool and state): the node-local disk.
	NodeRoot string
	// Incoming is where the agents ship: <Incoming>/<node>/ (the share).
	Incoming string
	// Parallel is how many nodes run at once; 0: all.
	Parallel int
	// Log receives the agents' and hooks' logs; nil discards them.
	Log *slog.Logger
	// Metrics is agent.metrics of every node (nil: the default set).
	Metrics []string
	// XID, when set, is raised on the first GPU of every failing job as
	// it ends, before its epilog: the Xid that took the job down.
	XID uint64

	reinitAfter time.Duration
}

// Result is what a run made.
type Result struct {
	Truth Truth
	// Shipped counts the files the agents shipped.
	Shipped int
}

// NodeName is the name of node i.
func NodeName(i int) string { return fmt.Sprintf("gpu%02d", i+1) }

func (o *Options) defaults() error {
	if o.Cluster == "" {
		o.Cluster = "sim"
	}
	if o.Model == "" {
		o.Model = "h100"
	}
	d := config.Default().Agent
	if o.Interval == 0 {
		o.Interval = d.Interval.Duration
	}
	if o.Segment == 0 {
		o.Segment = d.SegmentDuration.Duration
	}
	if o.Ship == 0 {
		o.Ship = d.ShipInterval.Duration
	}
	o.reinitAfter = d.ReinitAfter.Duration
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	}
	switch {
	case o.Nodes < 1 || o.GPUsPerNode < 1 || o.GPUsPerNode > 64:
		return fmt.Errorf("simulated cluster: %d nodes × %d GPUs: want at least one node of 1..64 GPUs", o.Nodes, o.GPUsPerNode)
	case o.Interval < time.Second || o.Interval%time.Second != 0:
		return fmt.Errorf("simulated cluster: interval %s is not a whole number of seconds", o.Interval)
	case o.Duration < o.Interval || o.Duration%o.Interval != 0:
		return fmt.Errorf("simulated cluster: duration %s is not a whole number of intervals (%s)", o.Duration, o.Interval)
	case !o.Start.Equal(o.Start.Truncate(time.Second)):
		return fmt.Errorf("simulated cluster: start %s is not on a whole second", o.Start)
	case o.JobsPerNode < 1:
		return fmt.Errorf("simulated cluster: %d jobs per node", o.JobsPerNode)
	case o.NodeRoot == "" || o.Incoming == "":
		return errors.New("simulated cluster: node root and incoming directory must be set")
	}
	return nil
}

// Plan returns the jobs the cluster will run, by id, without running it.
func Plan(o Options) ([]*Job, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	var jobs []*Job
	for _, p := range plan(&o) {
		jobs = append(jobs, p.jobs...)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].ID < jobs[b].ID })
	return jobs, nil
}

// plan schedules every node, then numbers the jobs in start order as
// Slurm would, and gives each job's processes their pids.
func plan(o *Options) []*nodePlan {
	users := Users()
	plans := make([]*nodePlan, o.Nodes)
	var all []*Job
	for n := range plans {
		plans[n] = planNode(o, n, users)
		all = append(all, plans[n].jobs...)
	}
	sort.SliceStable(all, func(a, b int) bool {
		if !all[a].Start.Equal(all[b].Start) {
			return all[a].Start.Before(all[b].Start)
		}
		return all[a].Node < all[b].Node
	})
	for i, j := range all {
		j.ID = uint64(1001 + i)
	}
	for _, p := range plans {
		p.owner = map[uint32]uint64{}
		pid := uint32(10_000)
		for _, j := range p.jobs {
			for _, pr := range j.profiles {
				pid++
				pr.pid = pid
				p.owner[pid] = j.ID
			}
		}
	}
	return plans
}

// Run simulates the cluster: every node on its own goroutine, each with
// its own clock, simulated GPUs, agent and spool. It returns once every
// agent has stopped and shipped everything.
func Run(ctx context.Context, o Options) (Result, error) {
	var res Result
	if err := o.defaults(); err != nil {
		return res, err
	}
	if err := os.MkdirAll(o.Incoming, 0o755); err != nil {
		return res, fmt.Errorf("simulated cluster: %w", err)
	}
	plans := plan(&o)
	par := o.Parallel
	if par <= 0 {
		par = len(plans)
	}
	idle := config.Default().Agent.IdleThreshold
	type nodeResult struct {
		jobs                  []JobTruth
		samples, lost, resets int64
		shipped               int
		err                   error
	}
	out := make([]nodeResult, len(plans))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &out[i]
			r.shipped, r.err = runNode(ctx, &o, p, func(base []uint64) {
				r.jobs, r.samples, r.lost, r.resets = nodeTruth(&o, p, base, idle)
			})
		}()
	}
	wg.Wait()
	t := Truth{Cluster: o.Cluster, Start: o.Start.UTC(), End: o.Start.Add(o.Duration).UTC(), Interval: o.Interval,
		Nodes: o.Nodes, GPUs: o.GPUsPerNode, ByAccount: map[string]Usage{}, IdleThreshold: idle}
	for _, r := range out {
		if r.err != nil {
			return res, r.err
		}
		t.Jobs = append(t.Jobs, r.jobs...)
		t.Samples += r.samples
		t.LostSamples += r.lost
		t.Resets += r.resets
		res.Shipped += r.shipped
	}
	sort.Slice(t.Jobs, func(a, b int) bool { return t.Jobs[a].ID < t.Jobs[b].ID })
	for _, j := range t.Jobs {
		t.Total.Add(j.Usage)
		u := t.ByAccount[j.Account]
		u.Add(j.Usage)
		t.ByAccount[j.Account] = u
	}
	res.Truth = t
	return res, nil
}

// simEventWait is how often a node's simulated driver wakes the agent's
// event watch: the agent's Stop waits for the watch, and a node stops
// when its simulated weeks end.
const simEventWait = 20 * time.Millisecond

// clock is a node's simulated time, read by its GPUs, agent and hooks.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(unix int64)      { c.ns.Store(unix * int64(time.Second)) }
func (c *clock) setTime(t time.Time) { c.ns.Store(t.UnixNano()) }

// step is something that happens on a node at a second.
type step struct {
	at    int64
	order int // at the same second: ends, faults, then starts
	job   *Job
	f     *fault
	kind  record.Kind
}

func steps(p *nodePlan) []step {
	var out []step
	for _, j := range p.jobs {
		out = append(out, step{at: j.Start.Unix(), order: 2, job: j, kind: record.JobStart}, step{at: j.End.Unix(), order: 0, job: j, kind: record.JobEnd})
	}
	for i := range p.faults {
		f := &p.faults[i]
		out = append(out, step{at: f.from, order: 1, f: f})
		if f.to != 0 {
			out = append(out, step{at: f.to, order: 1, f: f})
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].at != out[b].at {
			return out[a].at < out[b].at
		}
		return out[a].order < out[b].order
	})
	return out
}

// nodeConfig is the node's gpusuite.toml: production defaults with the
// simulation's directories and intervals.
func nodeConfig(o *Options, node string) config.Config {
	cfg := config.Default()
	cfg.Cluster.Name = o.Cluster
	cfg.Cluster.Node = node
	root := filepath.Join(o.NodeRoot, node)
	cfg.Spool.Dir = filepath.Join(root, "spool")
	cfg.Agent.StateDir = filepath.Join(root, "state")
	cfg.Agent.IncomingDir = o.Incoming
	cfg.Agent.ProcRoot = filepath.Join(root, "proc")
	cfg.Agent.Interval = config.Dur(o.Interval)
	cfg.Agent.SegmentDuration = config.Dur(max(o.Segment, o.Interval))
	cfg.Agent.ShipInterval = config.Dur(o.Ship)
	cfg.Agent.MetricsListen = ""
	// Simulated nodes share one host: no node takes the host's profile
	// socket.
	cfg.Agent.ProfileSocket = ""
	if o.Metrics != nil {
		cfg.Agent.Metrics = o.Metrics
	}
	cfg.GPU.Backend = "simulated"
	cfg.GPU.Simulated.Count = o.GPUsPerNode
	cfg.GPU.Simulated.Model = o.Model
	return cfg
}

// runNode runs one node from start to end. truth is called with the
// GPUs' energy counters at the start, before anything runs.
func runNode(ctx context.Context, o *Options, p *nodePlan, truth func(base []uint64)) (int, error) {
	node := p.name
	cfg := nodeConfig(o, node)
	clk := &clock{}
	clk.setTime(o.Start)
	srv, err := sim.New(sim.Options{Node: node, Count: o.GPUsPerNode, Model: o.Model, Now: clk.Now, MaxEventWait: simEventWait})
	if err != nil {
		return 0, err
	}
	var idle *profile // a GPU nobody holds
	base := make([]uint64, o.GPUsPerNode)
	for g := range base {
		d := srv.Device(g)
		idle.play(d)
		e, ret := d.GetTotalEnergyConsumption()
		if ret != 0 {
			return 0, fmt.Errorf("node %s: energy of GPU %d: %v", node, g, ret)
		}
		base[g] = e
	}
	truth(base)

	lib, err := gpu.OpenInterface(ctx, srv, cfg.Agent.NVMLTimeout.Duration)
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", node, err)
	}
	owner := p.owner
	a, err := agent.New(cfg, o.Cluster, node, agent.Deps{Lib: lib, Now: clk.Now, Log: o.Log.With("node", node),
		Owner: func(pid uint32) (uint64, error) { return owner[pid], nil }})
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", node, err)
	}
	// No agent listens on the hook socket (it is driven cycle by cycle).
	hd := HookDeps(clk.Now, cfg.Agent.ProcRoot, srv)
	hlog := o.Log.With("node", node)
	do := func(s step) error {
		switch {
		case s.f != nil && s.f.to == 0:
			srv.Device(s.f.gpu).ResetEnergy()
		case s.f != nil && s.at == s.f.from:
			srv.Device(s.f.gpu).Lose()
		case s.f != nil:
			srv.Device(s.f.gpu).Recover()
		case s.kind == record.JobStart:
			for i, g := range s.job.GPUs {
				s.job.profiles[i].play(srv.Device(g))
			}
			return runHook(ctx, s.kind, cfg, hd, s.job, o.Cluster, hlog)
		default:
			if o.XID != 0 && s.job.Kind == Failing && len(s.job.GPUs) > 0 {
				if err := raiseXID(ctx, a, srv.Device(s.job.GPUs[0]), o.XID); err != nil {
					return fmt.Errorf("node %s: job %d: %w", node, s.job.ID, err)
				}
			}
			if err := runHook(ctx, s.kind, cfg, hd, s.job, o.Cluster, hlog); err != nil {
				return err
			}
			for _, g := range s.job.GPUs {
				idle.play(srv.Device(g))
			}
		}
		return nil
	}

	iv := int64(o.Interval / time.Second)
	start, end := o.Start.Unix(), o.Start.Add(o.Duration).Unix()
	ship := int64(max(o.Ship, o.Interval) / time.Second)
	todo := steps(p)
	// until runs the steps due by t, each at its own second.
	until := func(t int64) error {
		for len(todo) > 0 && todo[0].at <= t {
			clk.set(todo[0].at)
			if err := do(todo[0]); err != nil {
				return err
			}
			todo = todo[1:]
		}
		return nil
	}
	shipped := 0
	shipAll := func() error {
		n, err := a.Ship(ctx)
		shipped += n
		if err != nil {
			return fmt.Errorf("node %s: ship: %w", node, err)
		}
		return nil
	}
	lastShip := start
	for t := start; t < end; t += iv {
		if err := ctx.Err(); err != nil {
			return shipped, err
		}
		if err := until(t); err != nil {
			return shipped, err
		}
		clk.set(t)
		if err := a.Cycle(ctx); err != nil {
			return shipped, fmt.Errorf("node %s: sample cycle at %s: %w", node, clk.Now().Format(time.RFC3339), err)
		}
		if t-lastShip >= ship {
			if err := shipAll(); err != nil {
				return shipped, err
			}
			lastShip = t
		}
	}
	// The end: the last epilogs, then the agent stops as on SIGTERM:
	// events applied, the open segment closed into the spool, shipped.
	if err := until(end); err != nil {
		return shipped, err
	}
	clk.set(end)
	if err := shipAll(); err != nil {
		return shipped, err
	}
	if err := a.Stop(); err != nil {
		return shipped, fmt.Errorf("node %s: stop agent: %w", node, err)
	}
	err = shipAll()
	return shipped, err
}

// xidWait bounds how long the agent's event watch may take to hand over
// an Xid raised on a simulated GPU.
const xidWait = 30 * time.Second

// raiseXID raises xid on d and waits until the agent's watch has it, so
// that it is stamped at the simulated time it was raised.
func raiseXID(ctx context.Context, a *agent.Agent, d *sim.Device, xid uint64) error {
	before := a.GPUEventsWaiting()
	d.InjectXID(xid)
	ctx, cancel := context.WithTimeout(ctx, xidWait)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for a.GPUEventsWaiting() <= before {
		select {
		case <-ctx.Done():
			return fmt.Errorf("simulated GPU raised Xid %d, but the agent's event watch did not hand it over in %s", xid, xidWait)
		case <-tick.C:
		}
	}
	return nil
}

// runHook runs the real prolog or epilog code for j with the environment
// slurmd gives it. The hook never fails a job: an error it returns is an
// accounting failure, and a simulation that loses a record is wrong.
func runHook(ctx context.Context, kind record.Kind, cfg config.Config, d hook.Deps, j *Job, cluster string, log *slog.Logger) error {
	gpus := make([]string, len(j.GPUs))
	for i, g := range j.GPUs {
		gpus[i] = strconv.Itoa(g)
	}
	env := map[string]string{
		"SLURM_JOB_ID": strconv.FormatUint(j.ID, 10), "SLURM_JOB_USER": j.User, "SLURM_JOB_UID": strconv.Itoa(j.UID),
		"SLURM_JOB_GID": "1000", "SLURM_JOB_ACCOUNT": j.Account, "SLURM_JOB_PARTITION": j.Partition,
		"SLURMD_NODENAME": j.Node, "SLURM_CLUSTER_NAME": cluster, "SLURM_JOB_GPUS": strings.Join(gpus, ","),
		"CUDA_VISIBLE_DEVICES": strings.Join(gpus, ","), "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
	}
	if kind == record.JobEnd {
		env["SLURM_SCRIPT_CONTEXT"] = "epilog_slurmd"
		env["SLURM_JOB_EXIT_CODE2"] = j.Exit
	}
	d.Getenv = func(k string) string { return env[k] }
	res, err := hook.Run(ctx, kind, cfg, d, log)
	if err != nil {
		return fmt.Errorf("%s of job %d on %s: %w", kind, j.ID, j.Node, err)
	}
	if res.Event != nil && len(res.Event.Quality) > 0 {
		return fmt.Errorf("%s of job %d on %s recorded with problems: %s", kind, j.ID, j.Node, strings.Join(res.Event.Quality, "; "))
	}
	return nil
}
