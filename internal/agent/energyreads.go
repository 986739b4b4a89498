package agent

import (
	"context"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
)

// With the agent up, a hook's identify names the event it is about to
// write, and the agent answers with the GPUs' identities alone: it reads
// their energy counters itself right after answering (one
// nvmlDeviceGetTotalEnergyConsumption costs 4 ms of CPU on an H100, and
// the job waits for the prolog). The event, announced or read from the
// spool, takes the readings by its key as the prolog's own.

// energyRead is the readings of one identify, by GPU UUID.
type energyRead struct {
	done chan struct{}
	at   time.Time
	mj   map[string]uint64
}

// energyReads are the readings not yet taken by their events.
type energyReads struct {
	mu sync.Mutex
	m  map[string]*energyRead
}

// Bounds on readings whose event never comes (a hook killed between its
// identify and its write).
const (
	maxEnergyReads = 1024
	energyReadTTL  = 10 * time.Minute
)

// start registers a reading for key; nil when key is taken or there is no
// room (the event then has no start energy, as with a failed read).
func (r *energyReads) start(key string, now time.Time) *energyRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*energyRead{}
	}
	for k, e := range r.m {
		if now.Sub(e.at) > energyReadTTL {
			delete(r.m, k)
		}
	}
	if _, dup := r.m[key]; dup || len(r.m) >= maxEnergyReads {
		return nil
	}
	e := &energyRead{done: make(chan struct{}), at: now, mj: map[string]uint64{}}
	r.m[key] = e
	return e
}

// take removes key's readings and returns them once read, waiting at most
// wait for a read still going on; found is false when none was registered
// for key (readings nil then too, as when the wait ran out).
func (r *energyReads) take(key string, wait time.Duration) (readings map[string]uint64, found bool) {
	r.mu.Lock()
	e := r.m[key]
	delete(r.m, key)
	r.mu.Unlock()
	if e == nil {
		return nil, false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-e.done:
		return e.mj, true
	case <-t.C:
		return nil, true
	}
}

// readEnergy reads devs' energy counters into e (each call bounded by the
// library's timeout) and marks it done.
func (a *Agent) readEnergy(ctx context.Context, e *energyRead, devs []*gpu.Device) {
	defer close(e.done)
	e.mj = a.counters(ctx, devs)
}

// counters reads devs' energy counters by UUID, each call bounded by the
// library's timeout; one that fails is logged and left out.
func (a *Agent) counters(ctx context.Context, devs []*gpu.Device) map[string]uint64 {
	mj := make(map[string]uint64, len(devs))
	for _, d := range devs {
		h := d.Handle()
		if v, err := gpu.Call(ctx, a.lib.Timeout, "nvmlDeviceGetTotalEnergyConsumption", h.GetTotalEnergyConsumption); err == nil {
			mj[d.UUID] = v
		} else {
			a.log.Warn("energy counter not read for a job event", "gpu", d.UUID, "err", err)
		}
	}
	return mj
}

// lateEnergyWithin is how recent an event must be for the agent to read
// its GPUs' counters itself when no reading was registered for it.
const lateEnergyWithin = 10 * time.Second

// eventEnergy fills the energy of ev's GPUs that came without it from the
// agent's own readings for ev's key. A recent event for which none was
// registered (a spool scan took it before its hook's identify line, sent
// without waiting, was handled) gets the counters read now, milliseconds
// late rather than missing.
func (a *Agent) eventEnergy(ev *record.Event) {
	need := false
	for _, g := range ev.GPUs {
		need = need || g.EnergyMJ == nil && g.UUID != ""
	}
	if !need {
		return
	}
	mj, found := a.energy.take(ev.Key, a.lib.Timeout)
	if !found && a.now().Sub(ev.Time).Abs() < lateEnergyWithin {
		mj = a.readEnergyNow(ev.GPUs)
	}
	for i := range ev.GPUs {
		if v, ok := mj[ev.GPUs[i].UUID]; ok && ev.GPUs[i].EnergyMJ == nil {
			ev.GPUs[i].EnergyMJ = &v
		}
	}
}

// readEnergyNow reads the counters of the GPUs without energy, by UUID.
func (a *Agent) readEnergyNow(gpus []record.GPU) map[string]uint64 {
	var devs []*gpu.Device
	for _, g := range gpus {
		for _, d := range a.devs {
			if g.EnergyMJ == nil && g.UUID != "" && d.UUID == g.UUID {
				devs = append(devs, d)
			}
		}
	}
	return a.counters(context.Background(), devs)
}
