// Package agent is `gpuacct agent`: the daemon on every GPU server that
// samples every GPU through NVML, attributes each sample to the Slurm jobs
// holding the GPU, keeps per job × GPU aggregates, writes raw samples in
// segment files, and ships everything spooled to /data (docs/agent.md).
//
// One goroutine (the loop) owns the sampling state: devices, allocations,
// aggregates and the open segment. The shipper, the hook socket and
// /metrics talk to it through channels or read a snapshot under a mutex.
package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
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
	shipAs   *shipIdentity

	// owned by the loop
	devs         []*gpu.Device
	xid          *gpu.XIDWatch
	allocs       map[string]*Alloc
	aggs         map[string]*aggState
	seen         map[string]time.Time
	ended        map[string]time.Time
	seg          *segment
	nextSeq      uint64
	failingSince time.Time
	incomplete   bool // a GPU was left out of the last enumeration
	// dirty is set when announced events changed the allocations since
	// the last checkpoint
	dirty bool

	// eventFiles are spooled event files already read, so a cycle reads
	// only new ones
	eventFiles map[string]bool

	announce chan *record.Event
	scanReq  chan chan []string

	mu   sync.Mutex // guards snap
	snap snapshot
}

// snapshot is what /metrics and the hook socket read.
type snapshot struct {
	devs     []*gpu.Device
	readings []gpu.Reading
	samples  []record.Sample
	allocs   []Alloc
	at       time.Time
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
		announce: make(chan *record.Event, 256), scanReq: make(chan chan []string),
	}
	if a.owner == nil {
		a.owner = cgroupOwner(cfg.Agent.ProcRoot)
	}
	a.metrics = newMetrics(a)
	var err error
	if a.shipAs, err = lookupShipUser(cfg.Agent.ShipUser); err != nil {
		return nil, err
	}
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
	return a, nil
}

// ---- checkpoint ----------------------------------------------------------

const checkpointName = "checkpoint.json"
const openSegmentName = "segment.open"

type checkpoint struct {
	Version int                  `json:"version"`
	Cluster string               `json:"cluster"`
	Node    string               `json:"node"`
	NextSeq uint64               `json:"next_seq"`
	Allocs  []*Alloc             `json:"allocs"`
	Aggs    []*aggState          `json:"aggs"`
	Seen    map[string]time.Time `json:"seen"`
	Ended   map[string]time.Time `json:"ended"`
}

func (a *Agent) loadCheckpoint() error {
	p := filepath.Join(a.stateDir, checkpointName)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		// A fresh start: sequence numbers begin at the time in ms, so a
		// wiped state directory never reuses a key already shipped.
		a.nextSeq = uint64(a.now().UnixMilli())
		return nil
	}
	if err != nil {
		return fmt.Errorf("read checkpoint %q: %w", p, err)
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("checkpoint %q is damaged (move it away to start afresh): %w", p, err)
	}
	if cp.Cluster != a.cluster || cp.Node != a.node {
		return fmt.Errorf("checkpoint %q belongs to %s/%s, not %s/%s (move it away to start afresh)", p, cp.Cluster, cp.Node, a.cluster, a.node)
	}
	a.nextSeq = cp.NextSeq
	for _, al := range cp.Allocs {
		a.allocs[jobKey(al.Job, al.Restart)] = al
	}
	for _, g := range cp.Aggs {
		a.aggs[g.Key] = g
	}
	if cp.Seen != nil {
		a.seen = cp.Seen
	}
	if cp.Ended != nil {
		a.ended = cp.Ended
	}
	return nil
}

func (a *Agent) saveCheckpoint() error {
	cp := checkpoint{Version: 1, Cluster: a.cluster, Node: a.node, NextSeq: a.nextSeq, Seen: a.seen, Ended: a.ended}
	for _, k := range sortedKeys(a.allocs) {
		cp.Allocs = append(cp.Allocs, a.allocs[k])
	}
	for _, k := range sortedKeys(a.aggs) {
		cp.Aggs = append(cp.Aggs, a.aggs[k])
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	return spool.Dir{Path: a.stateDir}.Replace(checkpointName, data)
}

// ---- segments --------------------------------------------------------------

// segment is the raw-sample file being written, in the state directory
// until it is closed and spooled.
type segment struct {
	f   *os.File
	w   *bufio.Writer
	hdr record.SegmentHeader
	n   int
	buf bytes.Buffer
}

func (a *Agent) openSegment(start time.Time) error {
	p := filepath.Join(a.stateDir, openSegmentName)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open segment %q: %w", p, err)
	}
	s := &segment{f: f, w: bufio.NewWriterSize(f, 64<<10), hdr: record.SegmentHeader{
		Schema: record.SegmentSchema, Key: record.SegmentKey(a.cluster, a.node, a.nextSeq),
		Cluster: a.cluster, Node: a.node, Seq: a.nextSeq,
		Interval: a.interval.Seconds(), Start: start.UTC(),
	}}
	line, _ := json.Marshal(s.hdr)
	s.w.Write(append(line, '\n'))
	if err := s.w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write segment %q: %w", p, err)
	}
	a.seg = s
	return nil
}

// append writes samples to the open segment. They reach the kernel (a
// write per cycle) so a killed agent loses none; fsync is left to the
// roll, as a power cut losing the last minutes of raw samples is accepted.
func (s *segment) append(samples []record.Sample) error {
	enc := json.NewEncoder(&s.buf)
	for i := range samples {
		s.buf.Reset()
		if err := enc.Encode(&samples[i]); err != nil {
			return fmt.Errorf("encode sample: %w", err)
		}
		s.w.Write(s.buf.Bytes())
		s.n++
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	return nil
}

// recoverSegment finishes a segment a killed agent left open: complete
// lines are kept, a torn last line dropped, its samples folded into the
// aggregates (which the checkpoint has only up to the last roll), and the
// segment spooled under its own sequence number.
func (a *Agent) recoverSegment() error {
	p := filepath.Join(a.stateDir, openSegmentName)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read open segment %q: %w", p, err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var hdr record.SegmentHeader
	if len(data) == 0 || json.Unmarshal(lines[0], &hdr) != nil || hdr.Schema != record.SegmentSchema {
		a.log.Warn("open segment left by a crash has no valid header; dropping it", "file", p)
		return os.Remove(p)
	}
	if hdr.Seq < a.nextSeq {
		// spooled before the crash, only its removal was lost
		return os.Remove(p)
	}
	var samples []record.Sample
	for _, l := range lines[1:] {
		var s record.Sample
		if err := json.Unmarshal(l, &s); err != nil {
			break
		}
		samples = append(samples, s)
	}
	for i := range samples {
		a.foldSample(&samples[i], hdr.Interval)
	}
	a.nextSeq = hdr.Seq
	a.log.Info("recovered segment left open by an unclean stop", "seq", hdr.Seq, "samples", len(samples))
	return a.finishSegment(data, hdr.Seq, len(samples))
}

func (a *Agent) foldSample(s *record.Sample, interval float64) {
	model := ""
	for _, d := range a.devs {
		if d.UUID == s.UUID {
			model = d.Model
		}
	}
	fold(a.aggs, s, interval, a.cluster, a.node, func(job uint64, restart int) *Alloc {
		return a.allocs[jobKey(job, restart)]
	}, model)
}

// roll closes the open segment, spools it with the aggregates that changed,
// checkpoints, and starts the next segment. Crash-safe at every step: each
// spool name is deterministic (a repeat finds it taken) and the checkpoint
// is written after what it accounts for.
func (a *Agent) roll(next time.Time) error {
	if a.seg != nil {
		if err := a.seg.w.Flush(); err != nil {
			return fmt.Errorf("flush segment: %w", err)
		}
		a.seg.f.Close()
		data, err := os.ReadFile(a.seg.f.Name())
		if err != nil {
			return fmt.Errorf("read segment: %w", err)
		}
		n := a.seg.n
		a.seg = nil
		if err := a.finishSegment(data, a.nextSeq, n); err != nil {
			return err
		}
	} else if err := a.finishSegment(nil, a.nextSeq, 0); err != nil {
		return err
	}
	return a.openSegment(next)
}

// finishSegment spools segment seq (when it holds samples), then the
// aggregates, then checkpoints with nextSeq = seq+1, then removes the
// open file.
func (a *Agent) finishSegment(data []byte, seq uint64, samples int) error {
	if samples > 0 {
		name := record.SegmentFileName(a.cluster, a.node, seq)
		if err := a.spool.Write(name, data); err != nil && !errors.Is(err, spool.ErrExists) {
			return fmt.Errorf("spool segment: %w", err)
		}
		a.metrics.segments.Inc()
	}
	if err := a.emitAggregates(seq); err != nil {
		return err
	}
	a.nextSeq = seq + 1
	a.dirty = false
	a.prune()
	if err := a.saveCheckpoint(); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(a.stateDir, openSegmentName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove open segment: %w", err)
	}
	a.trimSpool()
	return nil
}

// emitAggregates spools every aggregate that changed (and every ended
// one, as final), and drops the version it supersedes from the spool if
// it was not shipped yet.
func (a *Agent) emitAggregates(seq uint64) error {
	for _, k := range sortedKeys(a.aggs) {
		g := a.aggs[k]
		if g.Samples == g.Emitted && !g.Ended {
			continue
		}
		rec := g.record(seq)
		data, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encode aggregate %s: %w", g.Key, err)
		}
		name := record.JobGPUFileName(a.cluster, g.Job, g.RestartCount, a.node, g.UUID, seq)
		if err := a.spool.Write(name, data); err != nil && !errors.Is(err, spool.ErrExists) {
			return fmt.Errorf("spool aggregate %s: %w", g.Key, err)
		}
		if g.LastFile != "" && g.LastFile != name {
			_ = os.Remove(filepath.Join(a.spool.Path, g.LastFile)) // superseded; gone if shipped
		}
		g.LastFile = name
		g.Emitted = g.Samples
		if g.Ended {
			delete(a.aggs, k)
		}
	}
	return nil
}

// prune forgets event keys and ended jobs after two days.
func (a *Agent) prune() {
	cut := a.now().Add(-48 * time.Hour)
	for k, t := range a.seen {
		if t.Before(cut) {
			delete(a.seen, k)
		}
	}
	for k, t := range a.ended {
		if t.Before(cut) {
			delete(a.ended, k)
		}
	}
}

// trimSpool keeps the spool under agent.spool_max_bytes by dropping raw
// sample segments, oldest first. Events and aggregates are never dropped.
func (a *Agent) trimSpool() {
	entries, err := os.ReadDir(a.spool.Path)
	if err != nil {
		a.log.Warn("cannot list spool", "err", err)
		return
	}
	var total int64
	var segs []fs.DirEntry
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
		if record.KindOfFile(e.Name()) == record.FileSegment {
			segs = append(segs, e)
		}
	}
	for _, e := range segs { // names sort by sequence number
		if total <= a.cfg.SpoolMaxBytes {
			return
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := os.Remove(filepath.Join(a.spool.Path, e.Name())); err != nil {
			continue
		}
		total -= info.Size()
		a.metrics.dropped.Inc()
		a.log.Warn("spool full: dropped the oldest raw sample segment", "file", e.Name(), "bytes", info.Size(), "limit", a.cfg.SpoolMaxBytes)
	}
}

// ---- events ------------------------------------------------------------------

// scanEvents applies the job events in the spool that the agent has not
// seen and returns the names of all event files it has handled: only
// those may be shipped, so no allocation is shipped before it is
// checkpointed.
func (a *Agent) scanEvents() []string {
	handled, err := a.applySpooledEvents()
	if err != nil {
		return nil
	}
	return handled
}

// applySpooledEvents reads event files not read before, applies them
// (starts before ends, whatever the names sort as), and rolls when an
// allocation changed, so the checkpoint holds it before it can be shipped.
func (a *Agent) applySpooledEvents() ([]string, error) {
	names, err := a.spool.List()
	if err != nil {
		a.log.Warn("cannot list spool", "err", err)
		return nil, err
	}
	var events, fresh []string
	for _, n := range names {
		if record.KindOfFile(n) == record.FileEvent {
			events = append(events, n)
			if !a.eventFiles[n] {
				fresh = append(fresh, n)
			}
		}
	}
	sort.SliceStable(fresh, func(i, j int) bool {
		ki, _ := record.EventKindOfFile(fresh[i])
		kj, _ := record.EventKindOfFile(fresh[j])
		return ki == record.JobStart && kj != record.JobStart
	})
	changed := false
	for _, n := range fresh {
		data, err := os.ReadFile(filepath.Join(a.spool.Path, n))
		if err != nil {
			continue // shipped meanwhile
		}
		var ev record.Event
		if err := json.Unmarshal(data, &ev); err != nil || ev.Schema != record.EventSchema {
			a.log.Warn("spooled event unreadable; shipping it as is for ingest to judge", "file", n, "err", err)
		} else if a.applyEvent(&ev) {
			changed = true
		}
	}
	if changed || a.dirty {
		if err := a.roll(a.now()); err != nil {
			a.log.Error("cannot checkpoint after job events; events stay in the spool", "err", err)
			return nil, err
		}
	}
	keep := make(map[string]bool, len(events))
	for _, n := range events {
		keep[n] = true
	}
	a.eventFiles = keep
	return events, nil
}

// applyEvent updates the allocations; it reports whether anything changed.
func (a *Agent) applyEvent(ev *record.Event) bool {
	if ev.Key == "" || a.seen[ev.Key] != (time.Time{}) {
		return false
	}
	a.seen[ev.Key] = a.now()
	jk := jobKey(ev.Job.ID, ev.Job.RestartCount)
	switch ev.Kind {
	case record.JobStart:
		if _, done := a.ended[jk]; done {
			return true
		}
		al := &Alloc{Cluster: ev.Cluster, Job: ev.Job.ID, Restart: ev.Job.RestartCount, User: ev.Job.User,
			Account: ev.Job.Account, Partition: ev.Job.Partition, Start: ev.Time}
		for _, g := range ev.GPUs {
			uuid := g.UUID
			if uuid == "" {
				for _, d := range a.devs {
					if d.Minor == g.Minor {
						uuid = d.UUID
					}
				}
			}
			if uuid == "" {
				a.log.Warn("allocated GPU unknown to NVML; its samples cannot be attributed", "job", ev.Job.ID, "minor", g.Minor)
				continue
			}
			al.GPUs = append(al.GPUs, AllocGPU{UUID: uuid, EnergyMJ: g.EnergyMJ})
		}
		a.allocs[jk] = al
		// aggregates start now, with the prolog's energy as baseline, so
		// that an idle job that never gets a sample still has a record
		for _, g := range al.GPUs {
			key := record.JobGPUKey(a.cluster, al.Job, al.Restart, a.node, g.UUID)
			if g0 := a.aggs[key]; g0 == nil {
				idx, model := -1, ""
				for _, d := range a.devs {
					if d.UUID == g.UUID {
						idx, model = d.Index, d.Model
					}
				}
				a.aggs[key] = newAgg(a.cluster, a.node, al.Job, al.Restart, g.UUID, idx, model, al)
			} else if g0.User == "" {
				// folded from a recovered segment before this event was read
				g0.User, g0.Account, g0.Partition = al.User, al.Account, al.Partition
			}
		}
		a.log.Info("job started", "job", ev.Job.ID, "restart", ev.Job.RestartCount, "user", ev.Job.User, "gpus", len(al.GPUs))
	case record.JobEnd:
		a.ended[jk] = a.now()
		al := a.allocs[jk]
		delete(a.allocs, jk)
		for _, g := range a.aggs {
			if g.Job != ev.Job.ID || g.RestartCount != ev.Job.RestartCount {
				continue
			}
			for _, id := range ev.GPUs {
				if id.UUID == g.UUID && id.EnergyMJ != nil && ev.Time.After(g.Last) {
					g.addEnergy(*id.EnergyMJ, g.LastShare) // up to the epilog's reading
				}
			}
			g.Ended = true
		}
		a.log.Info("job ended", "job", ev.Job.ID, "restart", ev.Job.RestartCount, "known", al != nil)
	default:
		return false
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ---- sampling ---------------------------------------------------------------

// Cycle samples every GPU once at the agent's clock and records it.
func (a *Agent) Cycle(ctx context.Context) error {
	start := time.Now()
	now := a.now().UTC()
	if a.devs == nil {
		a.enumerate(ctx)
	}
	if a.seg == nil {
		if err := a.openSegment(now); err != nil {
			return err
		}
	} else if !now.Before(a.seg.hdr.Start.Add(a.cfg.SegmentDuration.Duration)) {
		if err := a.roll(now); err != nil {
			return err
		}
	}
	// job events the prolog/epilog spooled since the last cycle (the hook
	// socket usually announced them already)
	a.applySpooledEvents()
	readings := a.lib.SampleAll(ctx, a.devs)
	a.xid.Drain(readings, a.devs)
	byUUID := allocsByUUID(a.allocs)
	samples := make([]record.Sample, 0, len(readings))
	failing := false
	for _, r := range readings {
		for _, c := range r.Codes {
			a.metrics.nvmlErrors.WithLabelValues(c).Inc()
		}
		if r.Lost || len(r.Codes) > 0 && r.GPUUtil == nil && r.EnergyMJ == nil {
			failing = true
		}
		s := attribute(r, now, byUUID[r.UUID], a.owner, a.cfg.IdleThreshold)
		samples = append(samples, s)
	}
	if err := a.seg.append(samples); err != nil {
		return err
	}
	for i := range samples {
		a.foldSample(&samples[i], a.interval.Seconds())
	}
	a.metrics.samples.Add(float64(len(samples)))
	a.reinitIfFailing(ctx, failing, now)
	a.publish(readings, samples, now)
	a.metrics.sampleDuration.Observe(time.Since(start).Seconds())
	return nil
}

func (a *Agent) enumerate(ctx context.Context) {
	devs, problems, err := a.lib.Devices(ctx)
	if err != nil {
		a.log.Error("cannot list GPUs", "err", err)
		a.metrics.nvmlErrors.WithLabelValues("ENUMERATE").Inc()
		a.devs = []*gpu.Device{}
		return
	}
	for _, p := range problems {
		a.log.Warn("GPU left out", "err", p)
	}
	a.incomplete = len(problems) > 0
	a.devs = devs
	a.xid.Close()
	a.xid, err = a.lib.WatchXID(ctx, devs)
	if err != nil {
		a.log.Info("XID errors will be reported as missing", "err", err)
	}
}

// reinitIfFailing shuts NVML down and starts it again after GPUs kept
// failing for agent.reinit_after: a driver reload invalidates handles.
func (a *Agent) reinitIfFailing(ctx context.Context, failing bool, now time.Time) {
	if !failing && !a.incomplete && len(a.devs) > 0 {
		a.failingSince = time.Time{}
		return
	}
	if a.failingSince.IsZero() {
		a.failingSince = now
		return
	}
	if now.Sub(a.failingSince) < a.cfg.ReinitAfter.Duration {
		return
	}
	a.failingSince = now
	a.log.Warn("GPUs keep failing; initialising NVML again")
	if err := a.lib.Reinit(ctx); err != nil {
		a.log.Error("NVML re-initialisation failed", "err", err)
		return
	}
	a.enumerate(ctx)
}

func (a *Agent) publish(readings []gpu.Reading, samples []record.Sample, now time.Time) {
	allocs := make([]Alloc, 0, len(a.allocs))
	for _, k := range sortedKeys(a.allocs) {
		allocs = append(allocs, *a.allocs[k])
	}
	a.mu.Lock()
	a.snap = snapshot{devs: a.devs, readings: readings, samples: samples, allocs: allocs, at: now}
	a.mu.Unlock()
}

func (a *Agent) snapshot() snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.snap
}

// Stop closes the open segment into the spool, as a clean shutdown does.
func (a *Agent) Stop() error {
	defer a.xid.Close()
	if a.seg == nil {
		return a.finishSegment(nil, a.nextSeq, 0)
	}
	if err := a.seg.w.Flush(); err != nil {
		return fmt.Errorf("flush segment: %w", err)
	}
	a.seg.f.Close()
	data, err := os.ReadFile(a.seg.f.Name())
	if err != nil {
		return fmt.Errorf("read segment: %w", err)
	}
	n := a.seg.n
	a.seg = nil
	return a.finishSegment(data, a.nextSeq, n)
}
