package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

// GPU events: Xid and ECC errors come from NVML's event set on a goroutine
// of their own (gpu.EventWatch.Run); throttling from the clock event
// reasons each reading gives, when a reason starts or ends. The loop writes
// each as a gpusuite.gpuevent/v1 record with the jobs holding the GPU, and
// counts it in /metrics whether or not a storm keeps it from the spool.

// gpuEventQueue bounds the events waiting for the loop; more are dropped
// and counted (the watch must never block on a busy loop).
const gpuEventQueue = 1024

// maxEventRecordsPerHour bounds the records one GPU writes in an hour; the
// rest are counted and the next record says how many (Suppressed).
const maxEventRecordsPerHour = 120

type gpuEvent struct {
	gpu.Event
	t time.Time
}

type eventBudget struct {
	hour       time.Time
	written    int
	suppressed uint64
}

// throttleReasons maps each recorded throttle reason to its NVML clock
// event reason bits.
var throttleReasons = []struct {
	name string
	bits uint64
}{
	{record.ThrottlePower, nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown},
	{record.ThrottleThermal, nvml.ClocksEventReasonSwThermalSlowdown | nvml.ClocksThrottleReasonHwThermalSlowdown},
	{record.ThrottleHWSlowdown, nvml.ClocksThrottleReasonHwSlowdown},
}

// startWatch registers the GPUs for events and starts the goroutine that
// waits for them, after ending the previous one (a re-enumeration).
func (a *Agent) startWatch(ctx context.Context) {
	a.stopWatch()
	w, err := a.lib.WatchEvents(ctx, a.devs)
	if err != nil {
		a.log.Info("Xid and ECC events are not watched; Xid counts are reported as missing", "err", err)
		a.events = nil
		return
	}
	wctx, cancel := context.WithCancel(context.Background())
	a.events, a.stopEvents = w, cancel
	go w.Run(wctx, func(e gpu.Event) {
		select {
		case a.gpuEvents <- gpuEvent{e, a.now().UTC()}:
		default:
			a.metrics.gpuEventsDropped.Inc()
		}
	})
}

// stopWatch ends the event goroutine, waiting at most two of its waits.
func (a *Agent) stopWatch() {
	if a.stopEvents == nil {
		return
	}
	a.stopEvents()
	a.events.Stop(2 * gpu.EventWait)
	a.stopEvents = nil
}

// GPUEventsWaiting is how many Xid and ECC events the watch has handed
// over that the next cycle records. A simulated cluster, whose clock the
// agent reads, waits on it so that an event it raised is stamped at its
// own time.
func (a *Agent) GPUEventsWaiting() int { return len(a.gpuEvents) }

// drainGPUEvents records the events waiting in the queue.
func (a *Agent) drainGPUEvents() {
	for {
		select {
		case e := <-a.gpuEvents:
			a.gpuEvent(e)
		default:
			return
		}
	}
}

// gpuEvent counts one event and spools its record.
func (a *Agent) gpuEvent(e gpuEvent) {
	d := e.Dev
	lv := []string{a.node, strconv.Itoa(d.Index), d.UUID, d.Model}
	switch e.Kind {
	case record.GPUXid:
		a.metrics.xidErrors.WithLabelValues(append(lv, strconv.FormatUint(e.Code, 10))...).Inc()
		a.log.Warn("Xid error", "gpu", d.Index, "uuid", d.UUID, "xid", e.Code)
	case record.GPUECCSingle, record.GPUECCDouble:
		kind := "single"
		if e.Kind == record.GPUECCDouble {
			kind = "double"
			a.log.Warn("uncorrected ECC error", "gpu", d.Index, "uuid", d.UUID)
		}
		a.metrics.eccErrors.WithLabelValues(append(lv, kind)...).Inc()
	}
	a.writeGPUEvent(e.t, d.UUID, d.Index, e.Kind, e.Code, "")
}

// throttleChanges spools a throttle_start or throttle_end for each
// throttle reason that started or ended since the GPU's last reading.
func (a *Agent) throttleChanges(r gpu.Reading, t time.Time) {
	if r.Throttle == nil {
		return // unknown is no change
	}
	was := a.throttled[r.UUID]
	if was == nil {
		was = map[string]bool{}
		a.throttled[r.UUID] = was
	}
	for _, tr := range throttleReasons {
		on := *r.Throttle&tr.bits != 0
		if on == was[tr.name] {
			continue
		}
		was[tr.name] = on
		kind := record.GPUThrottleEnd
		if on {
			kind = record.GPUThrottleStart
			a.metrics.throttleEvents.WithLabelValues(a.node, strconv.Itoa(r.Index), r.UUID, r.Model, tr.name).Inc()
		}
		a.writeGPUEvent(t, r.UUID, r.Index, kind, 0, tr.name)
	}
}

// writeGPUEvent spools one GPU event record, within the GPU's hourly
// budget.
func (a *Agent) writeGPUEvent(t time.Time, uuid string, index int, kind record.GPUEventKind, code uint64, reason string) {
	b := a.evBudget[uuid]
	if b == nil {
		b = &eventBudget{}
		a.evBudget[uuid] = b
	}
	if h := t.Truncate(time.Hour); !h.Equal(b.hour) {
		b.hour, b.written = h, 0
	}
	if b.written >= maxEventRecordsPerHour {
		b.suppressed++
		a.metrics.gpuEventsSuppressed.Inc()
		return
	}
	ev := record.GPUEvent{
		Schema: record.GPUEventSchema, Key: record.GPUEventKey(a.cluster, a.node, uuid, t, kind, code, reason),
		Kind: kind, Time: t, Cluster: a.cluster, Node: a.node, UUID: uuid, Index: index, Code: code, Reason: reason,
		Suppressed: b.suppressed,
	}
	for _, al := range allocsByUUID(a.allocs)[uuid] {
		ev.Jobs = append(ev.Jobs, record.JobRef{Job: al.Job, Restart: al.Restart})
	}
	data, err := json.Marshal(ev)
	if err != nil {
		a.log.Error("cannot encode GPU event", "err", err)
		return
	}
	name := record.GPUEventFileName(a.cluster, a.node, uuid, t, kind, code, reason)
	if err := a.spool.Write(name, data); err != nil && !errors.Is(err, spool.ErrExists) {
		a.log.Error("cannot spool GPU event; it is counted in /metrics only", "err", err, "event", ev.Key)
		return
	}
	b.written++
	b.suppressed = 0
}
