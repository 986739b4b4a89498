package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
)

// LiveInterval is the live demo's agent interval: short, so that the
// board visibly moves.
const LiveInterval = 2 * time.Second

// The rolling jobs: each runs 20–40 s, and a GPU stays free 3–10 s
// between two of them.
const (
	jobMin, jobMax  = 20 * time.Second, 40 * time.Second
	gapMin, gapMax  = 3 * time.Second, 10 * time.Second
	schedulerTick   = time.Second
	readyPoll       = 20 * time.Millisecond
	firstRollingPID = 20_000
	strayPID        = 19_999
	lowJobsPerTen   = 2 // of ten rolling jobs, this many barely use their GPUs
	// The nodes ship every agent cycle and close a segment every few, so
	// that a job on the board is in the ledger (demo serve ingests as
	// files arrive) within seconds, its samples soon after.
	liveSegment      = 10 * time.Second
	liveShipInterval = LiveInterval
	// endWait bounds the epilogs of the jobs still running when the
	// demo ends.
	endWait = 30 * time.Second
)

// LiveOptions configure the live cluster.
type LiveOptions struct {
	Info Info
	// LiveDir receives the agents' snapshots (<node>.json).
	LiveDir string
	// WorkDir holds the nodes' local disks and the share they ship to;
	// the caller removes it.
	WorkDir string
	// Interval is the agents' interval; default LiveInterval.
	Interval time.Duration
	// Now is the clock of the scheduler and the simulated GPUs. The agents
	// sample on a real ticker, so it is the real clock but in tests.
	Now func() time.Time
	// Log receives the agents' and hooks' complaints; nil discards them.
	Log *slog.Logger
	// SlurmFile, when set, receives each view Slurm makes
	// (slurmstate.WriteFile), for gpuacct free and status --slurm-file.
	SlurmFile string
}

// Live is the demo cluster in real time: on every node the real agent
// (agent.Run, with its hook socket and live-state writer) samples
// simulated GPUs, and the real prolog and epilog start and end jobs of
// the demo's users. Its Slurm method is a synthetic Slurm view of it.
type Live struct {
	o     LiveOptions
	lay   layout
	began time.Time
	users []simcluster.User
	rng   *rand.Rand // scheduler goroutine only
	sf    *slurmFile // nil: the views are not written

	mu      sync.Mutex // guards the nodes' holders and owners, nextID, nextPID
	nodes   []*liveNode
	nextID  uint64
	nextPID uint32
}

// liveJob is a job running on a live node.
type liveJob struct {
	job *simcluster.Job
	// end is when it ends; zero: when the demo ends.
	end  time.Time
	pids []uint32
}

type liveNode struct {
	name string
	cfg  config.Config
	srv  *sim.Server
	hd   hook.Deps
	// holder is the job on each GPU, nil when none; freeAt when a free
	// GPU may take the next job; owners the job of each process.
	holder []*liveJob
	freeAt []time.Time
	owners map[uint32]uint64
}

// NewLive prepares the nodes of o.Info's cluster; Run brings them to life.
func NewLive(o LiveOptions) (*Live, error) {
	if o.Interval <= 0 {
		o.Interval = LiveInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	in := o.Info
	l := &Live{o: o, lay: newLayout(in.Nodes, in.GPUs), began: o.Now(), users: simcluster.Users(),
		rng: rand.New(rand.NewSource(in.Seed)), nextID: max(in.NextJob, 1), nextPID: firstRollingPID}
	if o.SlurmFile != "" {
		l.sf = &slurmFile{path: o.SlurmFile}
	}
	incoming := filepath.Join(o.WorkDir, "incoming")
	for _, d := range []string{o.LiveDir, incoming} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("live demo: %w", err)
		}
	}
	so := simcluster.Options{Cluster: in.Cluster, GPUsPerNode: in.GPUs, Model: in.Model, Interval: o.Interval,
		Segment: liveSegment, Ship: liveShipInterval, NodeRoot: filepath.Join(o.WorkDir, "nodes"), Incoming: incoming}
	for i := range in.Nodes {
		name := simcluster.NodeName(i)
		srv, err := sim.New(sim.Options{Node: name, Count: in.GPUs, Model: in.Model, Now: o.Now, MaxEventWait: 20 * time.Millisecond})
		if err != nil {
			return nil, fmt.Errorf("live demo: %w", err)
		}
		cfg := simcluster.NodeConfig(so, name)
		cfg.Agent.LiveDir = o.LiveDir
		n := &liveNode{name: name, cfg: cfg, srv: srv, holder: make([]*liveJob, in.GPUs), freeAt: make([]time.Time, in.GPUs),
			owners: map[uint32]uint64{}}
		n.hd = simcluster.HookDeps(o.Now, cfg.Agent.ProcRoot, srv)
		for g := range in.GPUs {
			srv.Device(g).SetWorkload(unheld)
			// The nodes come up after the simulated weeks as after a
			// reboot: each energy counter starts again from zero (a
			// driver load), which ingest takes as the reset it is, where
			// a counter read afresh would have risen since the ledger's
			// last reading by more than a GPU can draw.
			srv.Device(g).ResetEnergy()
		}
		l.nodes = append(l.nodes, n)
	}
	return l, nil
}

// unheld is a GPU nobody uses.
var unheld = sim.Constant(sim.Load{PowerMW: 70_000, TempC: 32, SMClockMHz: 345})

// Run starts every node's agent and the jobs, calls ready once every
// node's snapshot shows the jobs started, and goes on starting and
// ending jobs until ctx ends; then the jobs still running end through
// the real epilog, as the simulated cluster shuts down, and the agents
// stop (each closes its segment and ships, as on SIGTERM): the ledger
// that ingests what they shipped holds no job running for ever. The
// snapshots stay in LiveDir.
func (l *Live) Run(ctx context.Context, ready func()) error {
	// The agents outlive ctx by the last epilogs, which they record.
	actx, stopAgents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAgents()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(l.nodes))
	// An agent that cannot start stops those started, which are waited
	// for: none may write into WorkDir once Run has returned.
	failed := func(err error) error {
		stopAgents()
		wg.Wait()
		return err
	}
	for _, n := range l.nodes {
		lib, err := gpu.OpenInterface(ctx, n.srv, n.cfg.Agent.NVMLTimeout.Duration)
		if err != nil {
			return failed(fmt.Errorf("live demo: node %s: %w", n.name, err))
		}
		a, err := agent.New(n.cfg, l.o.Info.Cluster, n.name, agent.Deps{Lib: lib, Now: l.o.Now, Log: l.o.Log.With("node", n.name),
			Owner: l.owner(n)})
		if err != nil {
			lib.Close()
			return failed(fmt.Errorf("live demo: node %s: %w", n.name, err))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The agent samples through lib until it returns: only then
			// is it shut down, as agent.Main does.
			defer lib.Close()
			if err := a.Run(actx, n.cfg.Agent.SocketPath(n.cfg.Spool.Dir), "", quiet{}); err != nil {
				errs <- fmt.Errorf("live demo: agent of %s: %w", n.name, err)
				stop()
			}
		}()
	}
	err := l.schedule(sctx, ready)
	stop()
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endWait)
	err = errors.Join(err, l.endAll(ectx))
	cancel()
	stopAgents()
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	if ctx.Err() != nil && err == nil {
		return nil
	}
	return err
}

// quiet is the agents' systemd: nobody to notify.
type quiet struct{}

func (quiet) Notify(string)                   {}
func (quiet) WatchdogInterval() time.Duration { return 0 }

// owner is node n's /proc/PID/cgroup: the job of each process.
func (l *Live) owner(n *liveNode) func(uint32) (uint64, error) {
	return func(pid uint32) (uint64, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return n.owners[pid], nil
	}
}

// schedule starts the standing jobs, then every second ends the jobs
// due and starts new ones on free pool GPUs, until ctx ends.
func (l *Live) schedule(ctx context.Context, ready func()) error {
	if err := l.startStanding(ctx); err != nil {
		return err
	}
	if err := l.fill(ctx, true); err != nil {
		return err
	}
	started := l.o.Now()
	t := time.NewTicker(schedulerTick)
	defer t.Stop()
	// Until every node has shown the jobs, the snapshots are looked at
	// more often than the scheduler ticks: `gpuacct demo` waits on them.
	poll := time.NewTicker(readyPoll)
	defer poll.Stop()
	for {
		if ready != nil && l.snapshotsAfter(started) {
			ready()
			ready = nil
			poll.Stop()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
			continue
		case <-t.C:
		}
		if err := l.endDue(ctx); err != nil {
			return err
		}
		if err := l.fill(ctx, false); err != nil {
			return err
		}
	}
}

// snapshotsAfter says whether every node wrote a snapshot sampled after t.
func (l *Live) snapshotsAfter(t time.Time) bool {
	lives, _ := board.Load(l.o.LiveDir, l.o.Now(), board.Limits{})
	fresh := 0
	for _, lv := range lives {
		if lv.Cluster == l.o.Info.Cluster && lv.Time.After(t) {
			fresh++
		}
	}
	return fresh == len(l.nodes)
}

// startStanding starts the jobs that run as long as the demo: the one
// whose process strays onto another GPU, and the drained node's.
func (l *Live) startStanding(ctx context.Context) error {
	if n, g, ok := l.lay.find(held); ok {
		work := []sim.Workload{sim.Constant(sim.Load{PowerMW: 72_000, TempC: 34, SMClockMHz: 345})}
		j, err := l.start(ctx, l.nodes[n], l.user("erin"), []int{g}, "gpu", 0, work)
		if err != nil {
			return err
		}
		if sn, sg, ok := l.lay.find(stray); ok && sn == n {
			// the job's own process, on a GPU outside its allocation
			l.mu.Lock()
			l.nodes[n].owners[strayPID] = j.job.ID
			l.mu.Unlock()
			l.nodes[n].srv.Device(sg).SetWorkload(sim.Sine(35, 60, 90*time.Second, strayPID))
		}
	}
	if l.lay.drainedNode >= 0 {
		var gpus []int
		for g, r := range l.lay.roles[l.lay.drainedNode] {
			if r == draining {
				gpus = append(gpus, g)
			}
		}
		if len(gpus) > 0 {
			if _, err := l.start(ctx, l.nodes[l.lay.drainedNode], l.user("carol"), gpus, "long", 0, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *Live) user(name string) simcluster.User {
	for _, u := range l.users {
		if u.Name == name {
			return u
		}
	}
	return l.users[0]
}

// fill starts jobs on the free pool GPUs of every node, leaving
// keepFree of them free; at most one job a node a call, so that jobs
// start spread out. first: the demo's start, when the pool fills at once
// with jobs already under way: 2–22 s left each, so that they do not end
// together and the board moves within seconds of being opened.
func (l *Live) fill(ctx context.Context, first bool) error {
	now := l.o.Now()
	for i, n := range l.nodes {
		if i == l.lay.drainedNode {
			continue // a drained node takes no new job
		}
		for {
			var ready []int
			unheldPool := 0
			l.mu.Lock()
			for g, r := range l.lay.roles[i] {
				if r != pool || n.holder[g] != nil {
					continue
				}
				unheldPool++
				if !now.Before(n.freeAt[g]) {
					ready = append(ready, g)
				}
			}
			l.mu.Unlock()
			room := min(len(ready), unheldPool-l.lay.keepFree(i))
			if room <= 0 {
				break
			}
			k := min(room, 1+l.rng.Intn(2))
			l.rng.Shuffle(len(ready), func(a, b int) { ready[a], ready[b] = ready[b], ready[a] })
			gpus := ready[:k]
			users := l.users
			if i == l.lay.reservedNode {
				users = reservationUsers(l.users)
			}
			dur := jobMin + time.Duration(l.rng.Int63n(int64(jobMax-jobMin)))
			if first {
				dur = 2*time.Second + time.Duration(l.rng.Int63n(int64(jobMin)))
			}
			if _, err := l.start(ctx, n, users[l.rng.Intn(len(users))], gpus, "gpu", dur, nil); err != nil {
				return err
			}
			if !first {
				break
			}
		}
	}
	return nil
}

// reservationTeam is the team the reserved node is kept for.
const reservationTeam = "nlp"

func reservationUsers(all []simcluster.User) []simcluster.User {
	var out []simcluster.User
	for _, u := range all {
		if u.Account == reservationTeam {
			out = append(out, u)
		}
	}
	return out
}

// start starts a job of u on gpus of n for dur (0: until the demo ends)
// through the real prolog. work is what each GPU does; nil: a training
// run, or for a rolling job now and then one that barely uses its GPUs.
func (l *Live) start(ctx context.Context, n *liveNode, u simcluster.User, gpus []int, partition string, dur time.Duration, work []sim.Workload) (*liveJob, error) {
	now := l.o.Now()
	l.mu.Lock()
	id := l.nextID
	l.nextID++
	lj := &liveJob{job: &simcluster.Job{ID: id, Node: n.name, User: u.Name, UID: u.UID, Account: u.Account, Partition: partition,
		GPUs: append([]int(nil), gpus...), Start: now, Kind: simcluster.Busy, Exit: "0:0"}}
	if dur > 0 {
		lj.end = now.Add(dur)
		lj.job.End = lj.end
	}
	if work == nil && dur > 0 && l.rng.Intn(10) < lowJobsPerTen {
		lj.job.Kind = simcluster.Low
	}
	for range gpus {
		if work == nil {
			lj.pids = append(lj.pids, l.nextPID)
			n.owners[l.nextPID] = id
			l.nextPID++
		}
	}
	l.mu.Unlock()
	for i, g := range gpus {
		switch {
		case work != nil:
			n.srv.Device(g).SetWorkload(work[i])
		case lj.job.Kind == simcluster.Low:
			n.srv.Device(g).SetWorkload(sim.Sine(3, 20, 70*time.Second, lj.pids[i]))
		default:
			n.srv.Device(g).SetWorkload(sim.Sine(uint32(60+l.rng.Intn(20)), uint32(92+l.rng.Intn(9)), 60*time.Second, lj.pids[i]))
		}
	}
	if err := simcluster.RunHook(ctx, record.JobStart, n.cfg, n.hd, lj.job, l.o.Info.Cluster, l.o.Log); err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("live demo: %w", err)
	}
	l.mu.Lock()
	for _, g := range gpus {
		n.holder[g] = lj
	}
	l.mu.Unlock()
	return lj, nil
}

// endDue ends the jobs whose time is up through the real epilog.
func (l *Live) endDue(ctx context.Context) error {
	return l.end(ctx, false)
}

// endAll ends every job still running through the real epilog.
func (l *Live) endAll(ctx context.Context) error {
	return l.end(ctx, true)
}

// end ends the jobs due, or all of them, through the real epilog.
func (l *Live) end(ctx context.Context, all bool) error {
	now := l.o.Now()
	for _, n := range l.nodes {
		l.mu.Lock()
		var due []*liveJob
		for _, j := range n.holder {
			if j != nil && (all || !j.end.IsZero() && !now.Before(j.end)) && !containsJob(due, j) {
				due = append(due, j)
			}
		}
		l.mu.Unlock()
		for _, j := range due {
			if err := simcluster.RunHook(ctx, record.JobEnd, n.cfg, n.hd, j.job, l.o.Info.Cluster, l.o.Log); err != nil && ctx.Err() == nil {
				return fmt.Errorf("live demo: %w", err)
			}
			l.mu.Lock()
			for _, g := range j.job.GPUs {
				n.srv.Device(g).SetWorkload(unheld)
				n.holder[g] = nil
				n.freeAt[g] = now.Add(gapMin + time.Duration(l.rng.Int63n(int64(gapMax-gapMin))))
			}
			for _, p := range j.pids {
				delete(n.owners, p)
			}
			l.mu.Unlock()
		}
	}
	return nil
}

func containsJob(js []*liveJob, j *liveJob) bool {
	for _, x := range js {
		if x == j {
			return true
		}
	}
	return false
}
