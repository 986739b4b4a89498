package agent

import (
	"context"
	"time"

	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
)

// snapshot is what /metrics and the hook socket read.
type snapshot struct {
	devs     []*gpu.Device
	readings []gpu.Reading
	samples  []record.Sample
	allocs   []Alloc
	at       time.Time
}

// Cycle samples every GPU once at the agent's clock and records it.
func (a *Agent) Cycle(ctx context.Context) error {
	return a.cycleAt(ctx, a.now().UTC())
}

// cycleAt samples every GPU once, stamped now: the run loop passes its
// tick's time, so that a cycle that starts late (the one before ran long)
// is not stamped closer to the next than an interval. A cycle less than
// half an interval after the last one (the clock stepped back) is
// skipped: its samples would overlap the last ones' windows, and ingest
// refuses a segment with overlapping samples.
func (a *Agent) cycleAt(ctx context.Context, now time.Time) error {
	if !a.lastCycle.IsZero() && now.Sub(a.lastCycle) < a.interval/2 {
		a.log.Debug("cycle skipped: too soon after the last one", "last", a.lastCycle, "now", now)
		return nil
	}
	a.lastCycle = now
	start := time.Now()
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
	a.drainGPUEvents()
	devs, held := a.profiledDevs(now)
	readings := a.lib.SampleAll(ctx, devs)
	a.events.FillXID(readings, devs)
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
		a.throttleChanges(r, now)
	}
	a.shareParents(samples)
	if err := a.seg.append(samples); err != nil {
		return err
	}
	for i := range samples {
		a.foldSample(&samples[i], a.interval.Seconds())
	}
	a.metrics.samples.Add(float64(len(samples)))
	// profiled GPUs are shown by their latest profile sample
	for _, p := range held {
		readings = append(readings, p.last...)
		samples = append(samples, p.lastSamples...)
	}
	a.reinitIfFailing(ctx, failing, now)
	a.publish(readings, samples, now)
	a.offerLive(readings, samples, now)
	a.metrics.sampleDuration.Observe(time.Since(start).Seconds())
	return nil
}

func (a *Agent) enumerate(ctx context.Context) {
	devs, problems, err := a.lib.Devices(ctx)
	if err != nil {
		a.log.Error("cannot list GPUs", "err", err)
		a.metrics.nvmlErrors.WithLabelValues("ENUMERATE").Inc()
		a.devs = []*gpu.Device{}
		a.publishInventory()
		return
	}
	for _, p := range problems {
		a.log.Warn("GPU left out", "err", p)
	}
	a.incomplete = len(problems) > 0
	a.devs = devs
	a.publishInventory()
	a.lib.Choose(devs, a.metricNames)
	for _, d := range devs {
		if u := d.Unsupported(); len(u) > 0 {
			a.log.Info("GPU cannot give some chosen metrics; they are recorded as unsupported", "gpu", d.Index, "uuid", d.UUID, "unsupported", u)
		}
	}
	a.startWatch(ctx)
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
