package sim

import (
	"math"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Constant is a workload that never changes.
func Constant(l Load) Workload { return func(time.Time) Load { return l } }

// Busy is a typical training step: high utilization, memory in use, power
// near the board limit, one process with the given PID.
func Busy(util uint32, pid uint32) Workload {
	return Constant(Load{
		GPUUtil: util, MemUtil: util / 2, MemUsedMiB: 40000, PowerMW: 150000 + 4000*util,
		TempC: 60, SMClockMHz: 1980,
		Procs: []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 40000 << 20}},
	})
}

// Sine is a utilization curve between lo and hi percent with the given
// period, one process with pid; power follows utilization. It is a pure
// function of t, as a Workload must be.
func Sine(lo, hi uint32, period time.Duration, pid uint32) Workload {
	return func(t time.Time) Load {
		phase := float64(t.UnixNano()%int64(period)) / float64(period)
		u := float64(lo) + (float64(hi)-float64(lo))*(0.5+0.5*math.Sin(2*math.Pi*phase))
		util := uint32(math.Round(u))
		return Load{
			GPUUtil: util, MemUtil: util / 2, MemUsedMiB: 20000 + uint64(util)*200,
			PowerMW: 80000 + 5000*util, TempC: 40 + util/4, SMClockMHz: 1400 + 5*util,
			Procs: []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: (20000 + uint64(util)*200) << 20}},
		}
	}
}

// eventQueue holds Xid and ECC events until the agent's event set reads
// them.
type eventQueue struct {
	mu     sync.Mutex
	events []nvml.EventData
	// registered devices and the types they registered: only those
	// events are delivered.
	registered map[*Device]uint64
	// wake tells a waiting set that an event came.
	wake chan struct{}
}

// InjectXID raises an Xid error on the GPU, as the driver reports it
// through an NVML event set (nvmlEventSetWait).
func (d *Device) InjectXID(xid uint64) { d.inject(nvml.EventTypeXidCriticalError, xid) }

// InjectECC raises a corrected (single-bit) or, with double, an
// uncorrected ECC error: the counters rise and an event is reported.
func (d *Device) InjectECC(double bool) {
	d.mu.Lock()
	t := uint64(nvml.EventTypeSingleBitEccError)
	if double {
		d.eccTotal++
		t = nvml.EventTypeDoubleBitEccError
	} else {
		d.sbeTotal++
	}
	d.mu.Unlock()
	d.inject(t, 0)
}

func (d *Device) inject(t, data uint64) {
	q := d.srv.events()
	q.mu.Lock()
	if q.registered[d]&t != 0 {
		q.events = append(q.events, nvml.EventData{Device: d, EventType: t, EventData: data})
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (s *Server) events() *eventQueue {
	s.xidOnce.Do(func() { s.xid = &eventQueue{registered: map[*Device]uint64{}, wake: make(chan struct{}, 1)} })
	return s.xid
}

const simEventTypes = nvml.EventTypeXidCriticalError | nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError

// installEvents gives the node event sets whose wait wakes when an event
// comes. Called from New.
func (s *Server) installEvents() {
	q := s.events()
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		set := &eventSet{}
		set.wait = func(timeoutms uint32) (nvml.EventData, nvml.Return) {
			wait := time.Duration(timeoutms) * time.Millisecond
			if m := s.opts.MaxEventWait; m > 0 {
				wait = min(wait, m)
			}
			deadline := time.NewTimer(wait)
			defer deadline.Stop()
			for {
				q.mu.Lock()
				if len(q.events) > 0 {
					e := q.events[0]
					q.events = q.events[1:]
					q.mu.Unlock()
					return e, nvml.SUCCESS
				}
				q.mu.Unlock()
				select {
				case <-q.wake:
				case <-deadline.C:
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			}
		}
		return set, nvml.SUCCESS
	}
	s.EventSetFreeFunc = func(nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	for _, d := range s.devices {
		d := d
		d.RegisterEventsFunc = func(types uint64, _ nvml.EventSet) nvml.Return {
			if r := d.guard(); r != nvml.SUCCESS {
				return r
			}
			if types&^uint64(simEventTypes) != 0 {
				return nvml.ERROR_NOT_SUPPORTED
			}
			q.mu.Lock()
			q.registered[d] |= types
			q.mu.Unlock()
			return nvml.SUCCESS
		}
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
			return simEventTypes, nvml.SUCCESS
		}
	}
}

// Throttled is w with its clocks held down for reasons (an NVML clock
// event reason mask) from from until to.
func Throttled(w Workload, reasons uint64, from, to time.Time) Workload {
	return func(t time.Time) Load {
		l := w(t)
		if !t.Before(from) && t.Before(to) {
			l.Throttle |= reasons
		}
		return l
	}
}

// HangNow makes every later device call block until Release, as a wedged
// driver does in the middle of a run (Options.Hang hangs from the start).
func (s *Server) HangNow() { s.hangNow.Store(true) }
