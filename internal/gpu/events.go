package gpu

import (
	"context"
	"errors"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/record"
)

// Event is one error the driver reported on a GPU through the NVML
// events API.
type Event struct {
	Dev  *Device
	Kind record.GPUEventKind
	// Code is the Xid number, or the event data of an ECC event.
	Code uint64
}

// watchedEvents are the event types the agent registers for.
const watchedEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError

// EventWait bounds one nvmlEventSetWait, so that the watch notices a
// stop within it.
const EventWait = 500 * time.Millisecond

// EventWatch receives Xid and ECC events of every whole GPU on one
// goroutine (Run) and counts Xids per GPU and code.
type EventWatch struct {
	set   nvml.EventSet
	byDev map[nvml.Device]*Device
	done  chan struct{}
}

// ErrEventsUnsupported means no GPU could register for events.
var ErrEventsUnsupported = errors.New("GPU events not supported")

// WatchEvents registers every whole GPU for the events it supports of
// Xid, single- and double-bit ECC. A GPU that cannot register reports its
// Xid count as missing.
func (l *Library) WatchEvents(ctx context.Context, devs []*Device) (*EventWatch, error) {
	set, err := Call(ctx, l.Timeout, "nvmlEventSetCreate", func() (nvml.EventSet, nvml.Return) {
		var s nvml.EventSet
		ret := safe(func() nvml.Return {
			var r nvml.Return
			s, r = l.EventSetCreate()
			return r
		})
		return s, ret
	})
	if err != nil {
		return nil, err
	}
	w := &EventWatch{set: set, byDev: map[nvml.Device]*Device{}, done: make(chan struct{})}
	for _, d := range devs {
		if d.Parent != "" {
			continue // events are reported on the whole GPU
		}
		types := uint64(watchedEvents)
		if sup, err := Call(ctx, l.Timeout, "nvmlDeviceGetSupportedEventTypes", func() (uint64, nvml.Return) {
			var t uint64
			ret := safe(func() nvml.Return { var r nvml.Return; t, r = d.dev.GetSupportedEventTypes(); return r })
			return t, ret
		}); err == nil {
			types &= sup
		}
		if types&nvml.EventTypeXidCriticalError == 0 {
			continue
		}
		if _, err := Call(ctx, l.Timeout, "nvmlDeviceRegisterEvents", func() (struct{}, nvml.Return) {
			return struct{}{}, safe(func() nvml.Return { return d.dev.RegisterEvents(types, set) })
		}); err == nil {
			w.byDev[d.dev] = d
		}
	}
	if len(w.byDev) == 0 {
		close(w.done)
		w.free()
		return nil, ErrEventsUnsupported
	}
	return w, nil
}

// Run waits for events until ctx ends, each wait bounded by EventWait,
// and hands each to out, which must not block. It frees the set when it
// returns.
func (w *EventWatch) Run(ctx context.Context, out func(Event)) {
	defer close(w.done)
	defer w.free()
	for ctx.Err() == nil {
		var data nvml.EventData
		ret := safe(func() nvml.Return {
			var r nvml.Return
			data, r = w.set.Wait(uint32(EventWait / time.Millisecond))
			return r
		})
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			continue
		default:
			// a lost GPU or a failing driver: wait a bound before trying
			// again rather than spin
			select {
			case <-ctx.Done():
			case <-time.After(EventWait):
			}
			continue
		}
		d, ok := w.byDev[data.Device]
		if !ok {
			continue
		}
		switch {
		case data.EventType&nvml.EventTypeXidCriticalError != 0:
			d.mu.Lock()
			d.xids++
			d.mu.Unlock()
			out(Event{Dev: d, Kind: record.GPUXid, Code: data.EventData})
		case data.EventType&nvml.EventTypeDoubleBitEccError != 0:
			out(Event{Dev: d, Kind: record.GPUECCDouble, Code: data.EventData})
		case data.EventType&nvml.EventTypeSingleBitEccError != 0:
			out(Event{Dev: d, Kind: record.GPUECCSingle, Code: data.EventData})
		}
	}
}

// Stop waits for Run to return, at most wait: a wedged driver may hold
// the set's wait past its bound, and the agent's stop must not hang on it.
func (w *EventWatch) Stop(wait time.Duration) {
	if w == nil {
		return
	}
	select {
	case <-w.done:
	case <-time.After(wait):
	}
}

func (w *EventWatch) free() { _ = safe(func() nvml.Return { return w.set.Free() }) }

// FillXID sets each reading's Xid count: the Xids seen on its GPU since
// the watch began, or missing where the GPU has no watch (w nil: none).
func (w *EventWatch) FillXID(readings []Reading, devs []*Device) {
	for i, d := range devs {
		if w == nil {
			readings[i].Missing = append(readings[i].Missing, "xid: "+ErrEventsUnsupported.Error())
			continue
		}
		if _, ok := w.byDev[d.dev]; !ok {
			readings[i].Missing = append(readings[i].Missing, "xid: "+ErrEventsUnsupported.Error())
			continue
		}
		readings[i].XIDErrors = new(d.XIDCount())
	}
}

// XIDCount is the number of Xids the watch has seen on the GPU (their
// codes are counted in the agent's /metrics).
func (d *Device) XIDCount() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.xids
}
