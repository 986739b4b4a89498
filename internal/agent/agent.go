// Package agent is `gpuacct agent`: the daemon on every GPU server that
// samples every GPU through NVML, attributes each sample to the Slurm jobs
// holding the GPU, keeps per job × GPU aggregates, writes raw samples in
// segment files, and ships everything spooled to /data (docs/agent.md).
//
// One goroutine (the loop) owns the sampling state: devices, allocations,
// aggregates and the open segment. The shipper, the hook socket and
// /metrics talk to it through channels or read a snapshot under a mutex.
//
// Files:
//   - agent.go, run.go, main.go: the Agent, its goroutines, and the daemon
//     under systemd (notify, watchdog, stop).
//   - sample.go, model.go: the cycle (read every GPU, attribute, fold into
//     aggregates) and the allocation and aggregate types.
//   - segment.go, checkpoint.go, boot.go: segment files, the checkpoint,
//     jobs a reboot ended.
//   - events.go, socket.go, connlimit.go, inventory.go, energyreads.go: the
//     hooks' side: spooled events, the hook socket and its per-user limits,
//     the inventory a hook reads, the energy read after answering a hook.
//   - profile.go, profilesock.go: gpuacct profile's short-interval sampling
//     and its socket.
//   - migshare.go: MIG instances: their share of the parent's energy,
//     their GPM activity, a slice found by its instance ids.
//   - gpuevents.go: Xid, ECC and throttling events.
//   - shipping.go, trim.go: shipping the spool to /data, trimming it.
//   - live.go, procname.go: the live-state file, processes' command names;
//     metrics.go: /metrics.
package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/ship"
	"github.com/aicloud/gpusuite/internal/spool"
)

// Deps is what an agent takes from its surroundings.
type Deps struct {
	Lib *gpu.Library
	// Now is the clock; samples are stamped with it.
	Now func() time.Time
	Log *slog.Logger
	// Owner finds a process's job; nil reads /proc/PID/cgroup under
	// agent.proc_root.
	Owner func(pid uint32) (uint64, error)
}

// Agent is one running agent.
type Agent struct {
	cfg      config.Agent
	cluster  string
	node     string
	spool    spool.Dir
	stateDir string
	interval time.Duration
	lib      *gpu.Library
	now      func() time.Time
	log      *slog.Logger
	owner    owner
	metrics  *metrics
	shipper  *ship.Shipper
	// live writes the node's live-state file; nil when it is off
	live *liveWriter

	// owned by the loop
	devs []*gpu.Device
	// inventory is where the GPUs' identities are published for the
	// hooks (inventory.go); "" until Run names the socket
	inventory string
	// metricNames are the catalogue metrics agent.metrics chose
	metricNames []string
	// events is the GPU event watch and stopEvents ends its goroutine,
	// which hands events to gpuEvents
	events     *gpu.EventWatch
	stopEvents context.CancelFunc
	gpuEvents  chan gpuEvent
	// throttled is each GPU's throttle reasons in force (record's
	// Throttle* names), as the last reading saw them
	throttled map[string]map[string]bool
	// evBudget limits the GPU event records written per GPU (storms)
	evBudget map[string]*eventBudget
	// profiles are the short-interval profiles by job run (profile.go);
	// extraSeq numbers the next profile segment while a.seg is open
	profiles map[string]*profileRun
	extraSeq uint64
	profReq  chan profileReq
	allocs   map[string]*Alloc
	aggs     map[string]*aggState
	seen     map[string]time.Time
	ended    map[string]time.Time
	seg      *segment
	nextSeq  uint64
	// bootID is this boot's kernel id; prevBootID the checkpoint's
	bootID, prevBootID string
	failingSince       time.Time
	lastCycle          time.Time // the last cycle's stamp
	incomplete         bool      // a GPU was left out of the last enumeration
	// dirty is set when announced events changed the allocations since
	// the last checkpoint
	dirty bool

	// eventFiles are spooled event files already read, so a cycle reads
	// only new ones
	eventFiles map[string]bool
	// parentEnergy is each whole GPU's latest energy reading, whose share
	// its MIG instances' aggregates take (migshare.go)
	parentEnergy map[string]parentReading

	announce chan *record.Event
	// energy: the hooks' energy readings the agent took after answering
	// them, until their events take them (energyreads.go).
	energy  energyReads
	scanReq chan chan []string
	// hookLim and profLim cap each socket's connections (connlimit.go)
	hookLim, profLim *connLimits

	mu   sync.Mutex // guards snap
	snap snapshot
}

// New prepares an agent: directories, checkpoint, recovery of a segment
// left open by a crash. It does not start sampling.
func New(cfg config.Config, cluster, node string, d Deps) (*Agent, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	a := &Agent{
		cfg: cfg.Agent, cluster: cluster, node: node,
		spool: spool.Dir{Path: cfg.Spool.Dir}, stateDir: cfg.Agent.StateDir,
		interval: cfg.Agent.Interval.Duration, lib: d.Lib, now: d.Now, log: d.Log,
		owner:  d.Owner,
		allocs: map[string]*Alloc{}, aggs: map[string]*aggState{},
		seen: map[string]time.Time{}, ended: map[string]time.Time{}, eventFiles: map[string]bool{},
		announce: make(chan *record.Event, 256), scanReq: make(chan chan []string), profReq: make(chan profileReq),
		gpuEvents: make(chan gpuEvent, gpuEventQueue), throttled: map[string]map[string]bool{}, evBudget: map[string]*eventBudget{},
	}
	names, err := record.ExpandMetrics(cfg.Agent.Metrics)
	if err != nil {
		return nil, fmt.Errorf("agent.metrics: %w", err)
	}
	a.metricNames = names
	hookCap, profCap := socketCaps(fileLimit())
	a.hookLim, a.profLim = newConnLimits(hookCap, hookCap), newConnLimits(profCap, profilePerUID)
	if a.owner == nil {
		a.owner = cgroupOwner(cfg.Agent.ProcRoot)
	}
	a.bootID = readBootID(cfg.Agent.ProcRoot)
	a.metrics = newMetrics(a)
	as, err := ship.LookupUser(cfg.Agent.ShipUser)
	if err != nil {
		return nil, err
	}
	a.live = newLiveWriter(cfg.Agent.LiveDir, node, cfg.Agent.ProcRoot, a.interval, as, a.metrics.reg)
	a.shipper = &ship.Shipper{Spool: a.spool, Incoming: cfg.Agent.IncomingDir, Node: node, As: as, Shipped: a.metrics.shippedFiles.Inc}
	if err := a.spool.Ensure(); err != nil {
		return nil, err
	}
	if err := (spool.Dir{Path: a.stateDir}).Ensure(); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := a.loadCheckpoint(); err != nil {
		return nil, err
	}
	if err := a.recoverSegment(); err != nil {
		return nil, err
	}
	// After the recovered samples are folded: they belong to those jobs.
	a.endJobsOfLastBoot(a.prevBootID)
	return a, nil
}

// Stop records the GPU events the watch handed over since the last cycle
// (an Xid in the last interval before a shutdown is not lost), closes the
// open segment into the spool, as a clean shutdown does, and ends the GPU
// event watch.
func (a *Agent) Stop() error {
	defer a.stopWatch()
	a.drainGPUEvents()
	return a.closeSegment()
}
