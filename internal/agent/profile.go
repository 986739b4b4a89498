package agent

import (
	"context"
	"fmt"
	"os/user"
	"sort"
	"strconv"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
)

// Profiles: one job's GPUs sampled at a short interval for a while, asked
// for by root or the job's owner on the profile socket. From the cycle
// after the request until the profile's end those GPUs leave the normal
// cycle: the loop reads them on a 100 ms tick at the profile's interval
// into a segment of their own (interval_s = the profile's, a profile
// object in the header), so that no sample's window overlaps another's
// and ingest counts every GPU-second once. Their samples fold into the
// job's aggregates like any others. Then the normal interval takes over.

// profileOpenGlob matches the open profile segments in the state
// directory; profileOpenName names one.
const profileOpenGlob = "profile.*.open"

func profileOpenName(seq uint64) string { return fmt.Sprintf("profile.%020d.open", seq) }

type profileReq struct {
	req   agentproto.ProfileRequest
	uid   uint32
	reply chan agentproto.ProfileResponse
}

type profileRun struct {
	job     uint64
	restart int
	uid     uint32
	iv, dur time.Duration
	devs    []*gpu.Device
	// start is zero until the cycle that hands the GPUs over
	start, end time.Time
	// next is the number of the next sample from start
	next int64
	seg  *segment
	// last are the latest readings and samples, for /metrics and the
	// live state while the cycle leaves these GPUs out
	last        []gpu.Reading
	lastSamples []record.Sample
}

func (p *profileRun) active(now time.Time) bool { return p.start.IsZero() || now.Before(p.end) }

// span says when the profile runs: a profile asked for but not started
// has no end yet (its zero time must not be shown as one).
func (p *profileRun) span() string {
	if p.start.IsZero() {
		return fmt.Sprintf("for %s from the agent's next cycle", p.dur)
	}
	return "until " + p.end.Format(time.RFC3339)
}

// startProfile checks a request and plans its profile from the next
// cycle on.
func (a *Agent) startProfile(r profileReq) agentproto.ProfileResponse {
	iv := time.Duration(r.req.IntervalMS) * time.Millisecond
	dur := time.Duration(r.req.ForMS) * time.Millisecond
	maxDur := a.cfg.ProfileMaxDuration.Duration
	no := func(format string, args ...any) agentproto.ProfileResponse {
		return agentproto.ProfileResponse{Error: fmt.Sprintf(format, args...)}
	}
	switch {
	case iv < agentproto.MinProfileInterval || iv%agentproto.MinProfileInterval != 0:
		return no("interval %s: use at least %s, in steps of %s", iv, agentproto.MinProfileInterval, agentproto.MinProfileInterval)
	case iv >= a.interval:
		return no("interval %s is not shorter than the agent's own (%s)", iv, a.interval)
	case dur < iv || dur > maxDur:
		return no("duration %s is outside %s..%s (agent.profile_max_duration)", dur, iv, maxDur)
	}
	var al *Alloc
	for _, x := range a.allocs {
		if x.Job == r.req.Job && (al == nil || x.Restart > al.Restart) {
			al = x
		}
	}
	if al == nil {
		return no("job %d holds no GPU on node %s", r.req.Job, a.node)
	}
	if !mayProfile(r.uid, al) {
		return no("only root or the job's owner (%s) may profile job %d", al.User, al.Job)
	}
	now := a.now().UTC()
	p := &profileRun{job: al.Job, restart: al.Restart, uid: r.uid, iv: iv, dur: dur}
	for _, g := range al.GPUs {
		for _, d := range a.devs {
			if d.UUID == g.UUID {
				p.devs = append(p.devs, d)
			}
		}
	}
	if len(p.devs) == 0 {
		return no("job %d's GPUs are not among the GPUs the agent sees", al.Job)
	}
	for _, q := range a.profiles {
		if !q.active(now) {
			continue
		}
		if q.job == p.job && q.restart == p.restart {
			return no("job %d is already being profiled (%s)", p.job, q.span())
		}
		for _, d := range q.devs {
			for _, e := range p.devs {
				if d == e {
					return no("GPU %s is being profiled for job %d", d.UUID, q.job)
				}
			}
		}
	}
	if a.profiles == nil {
		a.profiles = map[string]*profileRun{}
	}
	a.profiles[jobKey(p.job, p.restart)] = p
	start := a.lastCycle.Add(a.interval)
	if start.Before(now) {
		start = now
	}
	resp := agentproto.ProfileResponse{Job: p.job, Restart: p.restart, Start: start, End: start.Add(dur)}
	for _, d := range p.devs {
		resp.GPUs = append(resp.GPUs, d.UUID)
	}
	a.log.Info("profile asked", "job", p.job, "restart", p.restart, "uid", r.uid, "interval", iv, "for", dur, "gpus", len(p.devs))
	return resp
}

// mayProfile: root, or the job's owner by uid (or by name where the
// prolog gave no uid).
func mayProfile(uid uint32, al *Alloc) bool {
	if uid == 0 {
		return true
	}
	if al.UID != nil {
		return int64(uid) == *al.UID
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	return err == nil && al.User != "" && u.Username == al.User
}

// profiledDevs starts the profiles waiting for this cycle and returns the
// devices the cycle samples (the others are profiled) and the profiles
// holding GPUs now.
func (a *Agent) profiledDevs(now time.Time) ([]*gpu.Device, []*profileRun) {
	if len(a.profiles) == 0 {
		return a.devs, nil
	}
	held := map[*gpu.Device]bool{}
	var runs []*profileRun
	for _, k := range sortedKeys(a.profiles) {
		p := a.profiles[k]
		if p.start.IsZero() {
			p.start, p.end = now, now.Add(p.dur)
			a.log.Info("profile started", "job", p.job, "restart", p.restart, "interval", p.iv, "until", p.end)
		}
		if !p.active(now) {
			continue
		}
		runs = append(runs, p)
		for _, d := range p.devs {
			held[d] = true
		}
	}
	if len(held) == 0 {
		return a.devs, nil
	}
	devs := make([]*gpu.Device, 0, len(a.devs))
	for _, d := range a.devs {
		if !held[d] {
			devs = append(devs, d)
		}
	}
	return devs, runs
}

// profiling says whether a profile is waiting or running, so the loop
// keeps its 100 ms tick.
func (a *Agent) profiling(now time.Time) bool {
	for _, p := range a.profiles {
		if p.active(now) {
			return true
		}
	}
	return false
}

// profileTick takes each running profile's sample that is due at now,
// stamped on the profile's own grid (start + k × interval).
func (a *Agent) profileTick(ctx context.Context, now time.Time) error {
	for _, k := range sortedKeys(a.profiles) {
		p := a.profiles[k]
		if p.start.IsZero() || !now.Before(p.end) || now.Before(p.start) {
			continue
		}
		n := int64(now.Sub(p.start) / p.iv)
		if n < p.next {
			continue
		}
		t := p.start.Add(time.Duration(n) * p.iv)
		if t.Add(p.iv).After(p.end) {
			continue // its window would reach past the end, into the normal cycle's
		}
		p.next = n + 1
		if err := a.profileSample(ctx, p, t); err != nil {
			return err
		}
	}
	return nil
}

func (a *Agent) profileSample(ctx context.Context, p *profileRun, t time.Time) error {
	start := time.Now()
	readings := a.lib.SampleAll(ctx, p.devs)
	a.events.FillXID(readings, p.devs)
	byUUID := allocsByUUID(a.allocs)
	samples := make([]record.Sample, 0, len(readings))
	for _, r := range readings {
		for _, c := range r.Codes {
			a.metrics.nvmlErrors.WithLabelValues(c).Inc()
		}
		samples = append(samples, attribute(r, t, byUUID[r.UUID], a.owner, a.cfg.IdleThreshold))
		a.throttleChanges(r, t)
	}
	if p.seg == nil {
		seq := a.extraSeq
		s, err := a.newSegment(profileOpenName(seq), record.SegmentHeader{
			Schema: record.SegmentSchema, Key: record.SegmentKey(a.cluster, a.node, seq),
			Cluster: a.cluster, Node: a.node, Seq: seq, Interval: p.iv.Seconds(), Start: t,
			Profile: &record.Profile{Job: p.job, Restart: p.restart, UID: p.uid, Start: p.start, End: p.end},
		})
		if err != nil {
			return err
		}
		a.extraSeq++
		p.seg = s
	}
	a.shareParents(samples)
	if err := p.seg.append(samples); err != nil {
		return err
	}
	for i := range samples {
		a.foldSample(&samples[i], p.iv.Seconds())
	}
	p.last, p.lastSamples = readings, samples
	a.metrics.samples.Add(float64(len(samples)))
	a.metrics.profileSamples.Add(float64(len(samples)))
	a.metrics.profileDuration.Observe(time.Since(start).Seconds())
	return nil
}

// closeProfileSegments closes the open profile segments, in number order,
// and forgets the profiles that ended.
func (a *Agent) closeProfileSegments() ([]segPart, error) {
	var parts []segPart
	now := a.now()
	for _, k := range sortedKeys(a.profiles) {
		p := a.profiles[k]
		if p.seg != nil {
			data, err := p.seg.read()
			if err != nil {
				return nil, err
			}
			parts = append(parts, segPart{data, p.seg.hdr.Seq, p.seg.n, profileOpenName(p.seg.hdr.Seq)})
			p.seg = nil
		}
		if !p.active(now) {
			delete(a.profiles, k)
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].seq < parts[j].seq })
	return parts, nil
}
