package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/ship"
)

// maxUserCache bounds the uid → name cache of process owners.
const maxUserCache = 4096

// liveWriter writes the node's live-state file (docs/architecture.md,
// "Live state"). The loop hands it the newest snapshot through a one-slot
// channel and never waits: a hung /data delays only this writer, which
// has at most one write in flight and skips the snapshots it missed.
type liveWriter struct {
	path     string
	procRoot string
	// timeout is how long one write may take before it counts as failed.
	timeout time.Duration
	ch      chan *record.Live
	// write replaces the file with l; tests inject a blocked one.
	write func(l *record.Live) error
	// users caches owners' names by uid, pids the owner of each process
	// of the last snapshot (writer goroutine only): a listed process keeps
	// its owner and command name, so they are looked up once.
	users map[uint32]string
	pids  map[uint32]procID
	// idle is, per GPU UUID, since when it has been allocated and idle
	// and to which jobs (the loop's alone: buildLive runs in Cycle).
	idle map[string]idleMark

	errors    prometheus.Counter
	lastWrite prometheus.Gauge
}

// newLiveWriter is nil when agent.live_dir is "" (the file is off).
func newLiveWriter(dir, node, procRoot string, interval time.Duration, as *ship.Identity, reg *prometheus.Registry) *liveWriter {
	if dir == "" {
		return nil
	}
	w := &liveWriter{
		path: filepath.Join(dir, record.LiveFileName(node)), procRoot: procRoot, timeout: interval,
		ch: make(chan *record.Live, 1), users: map[uint32]string{}, idle: map[string]idleMark{},
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpusuite_agent_live_write_errors_total", Help: "Writes of the live-state file that failed or took longer than agent.interval.",
		}),
		lastWrite: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpusuite_agent_live_last_write_timestamp_seconds", Help: "When the live-state file was last replaced (Unix time).",
		}),
	}
	w.write = func(l *record.Live) error { return writeLiveFile(w.path, as, l) }
	reg.MustRegister(w.errors, w.lastWrite)
	w.seedIdle(node)
	return w
}

// maxOwnLive bounds the read of the agent's own last file at start.
const maxOwnLive = 4 << 20

// seedIdle takes the idle marks of the agent's own last live file, so a
// restart does not make an idle GPU look freshly idle (check's idle
// alerts would wait their threshold again). The first cycle keeps a mark
// only while the same jobs are still idle on the GPU; a missing or
// unreadable file seeds nothing.
func (w *liveWriter) seedIdle(node string) {
	f, err := os.OpenFile(w.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	var l record.Live
	if err := json.NewDecoder(io.LimitReader(f, maxOwnLive)).Decode(&l); err != nil || l.Node != node {
		return
	}
	for _, g := range l.GPUs {
		if g.IdleSince == nil || g.UUID == "" || len(g.Jobs) == 0 {
			continue
		}
		m := idleMark{since: *g.IdleSince}
		for _, j := range g.Jobs {
			m.jobs = append(m.jobs, record.JobShare{Job: j.Job, Restart: j.Restart, Idle: true})
		}
		w.idle[g.UUID] = m
	}
}

// offerLive builds the live state from the cycle's readings and samples
// (no further NVML call) and hands it to the writer, replacing a snapshot
// the writer has not taken yet. It never blocks.
func (a *Agent) offerLive(readings []gpu.Reading, samples []record.Sample, now time.Time) {
	if a.live == nil {
		return
	}
	l := a.buildLive(readings, samples, now)
	for {
		select {
		case a.live.ch <- l:
			return
		default:
		}
		// the loop is the one sender: after dropping the older snapshot
		// the send succeeds
		select {
		case <-a.live.ch:
		default:
		}
	}
}

// idleMark is when a GPU went idle and the jobs that held it then.
type idleMark struct {
	since time.Time
	jobs  []record.JobShare
}

func (a *Agent) buildLive(readings []gpu.Reading, samples []record.Sample, now time.Time) *record.Live {
	l := &record.Live{
		Schema: record.LiveSchema, Cluster: a.cluster, Node: a.node, Time: now,
		Interval: a.interval.Seconds(), GPUs: make([]record.LiveGPU, 0, len(readings)),
	}
	a.live.markIdle(samples, now)
	for i, r := range readings {
		g := record.LiveGPU{
			Index: r.Index, UUID: r.UUID, Model: r.Model, Util: r.GPUUtil,
			MemUsedMiB: r.MemUsedMiB, MemTotalMiB: r.MemTotalMiB, PowerMW: r.PowerMW, TempC: r.TempC,
		}
		if r.Minor >= 0 {
			m := r.Minor
			g.Minor = &m
		}
		if len(r.Missing) > 0 {
			g.Missing = append([]string(nil), r.Missing...)
		}
		if i < len(samples) {
			s := samples[i]
			for _, j := range s.Jobs {
				lj := record.LiveJob{Job: j.Job, Restart: j.Restart}
				if al := a.allocs[jobKey(j.Job, j.Restart)]; al != nil {
					lj.User, lj.Account, lj.Start = al.User, al.Account, al.Start
				}
				g.Jobs = append(g.Jobs, lj)
			}
			for _, p := range s.Procs {
				g.Procs = append(g.Procs, record.LiveProc{PID: p.PID, Job: p.Job, MemUsedMiB: p.MemUsedMiB, Foreign: p.Foreign})
			}
			if m, ok := a.live.idle[s.UUID]; ok {
				since := m.since
				g.IdleSince = &since
			}
		}
		l.GPUs = append(l.GPUs, g)
	}
	return l
}

// markIdle keeps, across cycles, since when each allocated GPU has been
// idle: every job on it idle by the samples' own rule (under
// agent.idle_threshold, or none of its processes there) in each cycle
// since. A busy cycle, a GPU no job holds, or another set of jobs on the
// GPU starts the count again; a GPU gone from the samples is forgotten.
func (w *liveWriter) markIdle(samples []record.Sample, now time.Time) {
	seen := 0
	for i := range samples {
		s := &samples[i]
		if !allIdle(s.Jobs) {
			delete(w.idle, s.UUID)
			continue
		}
		seen++
		if m, ok := w.idle[s.UUID]; ok && sameJobs(m.jobs, s.Jobs) {
			continue
		}
		w.idle[s.UUID] = idleMark{since: now, jobs: append([]record.JobShare(nil), s.Jobs...)}
	}
	if len(w.idle) > seen {
		keep := make(map[string]bool, len(samples))
		for i := range samples {
			keep[samples[i].UUID] = true
		}
		for uuid := range w.idle {
			if !keep[uuid] {
				delete(w.idle, uuid)
			}
		}
	}
}

// allIdle: the GPU is allocated and each of its jobs idle on it.
func allIdle(jobs []record.JobShare) bool {
	for _, j := range jobs {
		if !j.Idle {
			return false
		}
	}
	return len(jobs) > 0
}

// sameJobs compares the job sets (job and restart) of two samples.
func sameJobs(a, b []record.JobShare) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Job != b[i].Job || a[i].Restart != b[i].Restart {
			return false
		}
	}
	return true
}

// liveLoop writes the snapshots offered until ctx ends.
func (a *Agent) liveLoop(ctx context.Context) {
	w := a.live
	var (
		inflight chan error
		timer    *time.Timer
		expired  <-chan time.Time
		failing  bool
	)
	state := func(err error) {
		if err != nil {
			w.errors.Inc()
		}
		switch {
		case err != nil && !failing:
			a.log.Warn("cannot write the live-state file; the head shows this node stale until it can", "path", w.path, "err", err)
		case err == nil && failing:
			a.log.Info("live-state file written again", "path", w.path)
		}
		failing = err != nil
	}
	for {
		next := w.ch
		if inflight != nil {
			next = nil // one write at a time: a hung one is waited for
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case l := <-next:
			done := make(chan error, 1)
			inflight = done
			go func() {
				w.fillUsers(l)
				done <- w.write(l)
			}()
			timer = time.NewTimer(w.timeout)
			expired = timer.C
		case <-expired:
			expired = nil
			state(fmt.Errorf("write %q: no answer in %s", w.path, w.timeout))
		case err := <-inflight:
			inflight = nil
			timedOut := expired == nil
			timer.Stop()
			expired = nil
			if err == nil {
				w.lastWrite.SetToCurrentTime()
				state(nil)
			} else if !timedOut {
				state(err) // a late failure was counted as its timeout
			}
		}
	}
}

// procID is a listed process's owner and command name.
type procID struct{ user, name string }

// fillUsers names each process's owner from the uid of /proc/PID (what
// the kernel says, so a foreign process shows who runs it) and its
// command (procName). A process gone by now keeps neither.
func (w *liveWriter) fillUsers(l *record.Live) {
	seen := make(map[uint32]procID, len(w.pids))
	for gi := range l.GPUs {
		for pi := range l.GPUs[gi].Procs {
			p := &l.GPUs[gi].Procs[pi]
			id, ok := w.pids[p.PID]
			if !ok {
				id = procID{user: w.procUser(p.PID), name: procName(w.procRoot, p.PID)}
			}
			p.User, p.Name, seen[p.PID] = id.user, id.name, id
		}
	}
	w.pids = seen
}

func (w *liveWriter) procUser(pid uint32) string {
	fi, err := os.Stat(filepath.Join(w.procRoot, strconv.FormatUint(uint64(pid), 10)))
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return w.userName(st.Uid)
}

func (w *liveWriter) userName(uid uint32) string {
	if n, ok := w.users[uid]; ok {
		return n
	}
	id := strconv.FormatUint(uint64(uid), 10)
	name := id
	if u, err := user.LookupId(id); err == nil {
		name = u.Username
	}
	if len(w.users) >= maxUserCache {
		clear(w.users)
	}
	w.users[uid] = name
	return name
}

// writeLiveFile replaces path with l (replaceFile), as the live_dir's
// owner. The temp name does not end in .json, so a reader's
// <live_dir>/*.json never picks it up. It is not fsynced: the next cycle
// replaces it anyway.
func writeLiveFile(path string, as *ship.Identity, l *record.Live) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode live state: %w", err)
	}
	return ship.AsUser(as, func() error { return replaceFile(path, data, 0o644) })
}

// replaceFile replaces path with data: a temp file in the same directory,
// renamed over it, so a reader sees the old content or the new, never
// half. The temp name is fixed (the node's agent is the file's one writer,
// so a crash leaves at most one, truncated at the next write) and hidden.
func replaceFile(path string, data []byte, mode os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("create %q: %w", tmp, err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("write %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %q: %w", path, err)
	}
	return nil
}
