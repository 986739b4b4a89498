// Package sim is gpusuite's one simulated GPU backend: go-nvml's mock DGX
// servers with the device methods gpusuite calls filled in and made
// programmable. Tests, benchmarks and the demo all use it; nothing else
// fakes NVML.
//
// Identity (UUID, minor) is a pure function of node name and index, and an
// idle GPU's energy counter is a pure function of the clock, so separate
// processes (a prolog, then an epilog) see one consistent node.
//
// Files: sim.go (servers, devices, options, loads), extend.go (workloads
// and the programmable faults), direct.go (the device methods the agent
// calls, answered without go-nvml's call recording), metrics.go (the
// profile metrics derived from a load), mig.go (MIG devices).
package sim

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Options describe a simulated node.
type Options struct {
	Node  string
	Count int
	// Model is a100, h100, h200 or b200.
	Model string
	// Minors[i] is the device minor of NVML index i; nil means i.
	Minors []int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// InitDelay makes Init slow, as nvmlInit is without persistence mode.
	InitDelay time.Duration
	// Hang makes device calls block until Release is called.
	Hang bool
	// Fail makes Init return ERROR_DRIVER_NOT_LOADED.
	Fail bool
	// MaxEventWait, when set, bounds every event set wait below what the
	// caller asked (the agent asks 500 ms), as if the driver woke its
	// waiters that often: an agent waits for its watch to stop, and a
	// simulated node that must stop at once is not held that long.
	MaxEventWait time.Duration
}

// bootEpoch anchors the idle energy counters: energy = idle power × time
// since this instant, so every process computes the same counter.
var bootEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Load is what a simulated GPU is doing at a moment.
type Load struct {
	GPUUtil    uint32 // percent
	MemUtil    uint32 // percent
	MemUsedMiB uint64
	PowerMW    uint32
	TempC      uint32
	SMClockMHz uint32
	Throttle   uint64
	Procs      []nvml.ProcessInfo
	// Profile is what GPM and the traffic counters see; nil derives it
	// from GPUUtil (metrics.go).
	Profile *Profile
}

// Workload gives a GPU's load at time t. Workloads must be pure functions
// of t so that results do not depend on how often a GPU is sampled.
type Workload func(t time.Time) Load

// Server is a simulated node. It implements nvml.Interface.
type Server struct {
	*server.Server
	opts    Options
	now     func() time.Time
	devices []*Device
	hang    chan struct{}
	hangNow atomic.Bool
	xidOnce sync.Once
	xid     *eventQueue
}

// Device is one simulated GPU.
type Device struct {
	*server.Device
	srv *Server

	mu        sync.Mutex
	idlePower uint32 // mW
	workload  Workload
	// steady: workload is the same Load at every instant (SetLoad, or
	// none), so advance integrates it in one step.
	steady   bool
	lost     bool
	energy   uint64 // mJ, valid after the first read
	lastRead time.Time
	primed   bool
	eccTotal uint64
	sbeTotal uint64
	counters counters
}

var models = map[string]gpus.Config{
	"a100": gpus.A100_SXM4_80GB,
	"h100": gpus.H100_SXM5_80GB,
	"h200": gpus.H200_SXM5_141GB,
	"b200": gpus.B200_SXM5_180GB,
}

var idlePowerMW = map[string]uint32{"a100": 55000, "h100": 70000, "h200": 75000, "b200": 140000}

// Models lists the accepted model names.
func Models() []string { return []string{"a100", "h100", "h200", "b200"} }

// New builds a simulated node.
func New(o Options) (*Server, error) {
	cfg, ok := models[strings.ToLower(o.Model)]
	if !ok {
		return nil, fmt.Errorf("simulated model %q: want one of %s", o.Model, strings.Join(Models(), ", "))
	}
	if o.Count < 0 || o.Count > 64 {
		return nil, fmt.Errorf("simulated GPU count %d: want 0..64", o.Count)
	}
	if o.Minors != nil && len(o.Minors) != o.Count {
		return nil, fmt.Errorf("simulated minors: %d given for %d GPUs", len(o.Minors), o.Count)
	}
	if o.Node == "" {
		o.Node = "node"
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	base, err := server.New(
		server.WithGPUs(gpus.Multiple(o.Count, cfg)...),
		server.WithDriverVersion("550.54.15"),
		server.WithNVMLVersion("12.550.54.15"),
		server.WithCUDADriverVersion(12040),
	)
	if err != nil {
		return nil, fmt.Errorf("simulated server: %w", err)
	}
	s := &Server{Server: base, opts: o, now: now, hang: make(chan struct{})}
	for i, d := range base.Devices {
		md := d.(*server.Device)
		md.UUID = UUID(o.Node, i)
		if o.Minors != nil {
			md.Minor = o.Minors[i]
		}
		sd := &Device{Device: md, srv: s, idlePower: idlePowerMW[strings.ToLower(o.Model)]}
		sd.install()
		s.devices = append(s.devices, sd)
		base.Devices[i] = sd
	}
	s.install()
	s.installEvents()
	return s, nil
}

// UUID is the deterministic UUID of simulated GPU index on node.
func UUID(node string, index int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("gpusuite-sim/%s/%d", node, index)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func (s *Server) install() {
	s.InitFunc = func() nvml.Return {
		if s.opts.InitDelay > 0 {
			time.Sleep(s.opts.InitDelay)
		}
		if s.opts.Fail {
			return nvml.ERROR_DRIVER_NOT_LOADED
		}
		return nvml.SUCCESS
	}
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < 0 || i >= len(s.devices) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		return s.devices[i], nvml.SUCCESS
	}
	s.DeviceGetHandleByUUIDFunc = func(uuid string) (nvml.Device, nvml.Return) {
		for _, d := range s.devices {
			if d.UUID == uuid {
				return d, nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	s.ErrorStringFunc = func(r nvml.Return) string { return returnString(r) }
}

// Device returns simulated GPU i for programming.
func (s *Server) Device(i int) *Device { return s.devices[i] }

// Count is the number of simulated GPUs.
func (s *Server) Count() int { return len(s.devices) }

// Release unblocks calls held by Options.Hang.
func (s *Server) Release() {
	select {
	case <-s.hang:
	default:
		close(s.hang)
	}
}

// SetWorkload programs what the GPU does from now on.
func (d *Device) SetWorkload(w Workload) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.advance()
	d.workload, d.steady = w, false
}

// SetLoad programs a GPU that does l from now on: Constant(l), which the
// energy counter integrates over any span at once rather than second by
// second (a simulated fortnight of idle GPUs is millions of seconds).
func (d *Device) SetLoad(l Load) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.advance()
	d.workload, d.steady = Constant(l), true
}

// Lose makes every later call on the GPU return ERROR_GPU_IS_LOST, as after
// an XID 79; Recover undoes it.
func (d *Device) Lose() { d.mu.Lock(); d.lost = true; d.mu.Unlock() }

// Recover brings a lost GPU back.
func (d *Device) Recover() { d.mu.Lock(); d.lost = false; d.mu.Unlock() }

// ResetEnergy sets the energy counter back to zero, as a driver reload does.
func (d *Device) ResetEnergy() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.advance()
	d.energy = 0
}

// AddECCErrors raises the uncorrected ECC error count.
func (d *Device) AddECCErrors(n uint64) { d.mu.Lock(); d.eccTotal += n; d.mu.Unlock() }

// load must be called with d.mu held.
func (d *Device) load(t time.Time) Load {
	if d.workload == nil {
		return Load{PowerMW: d.idlePower, TempC: 32, SMClockMHz: 345}
	}
	return d.workload(t)
}

// advance integrates power into the energy counter up to now. Called with
// d.mu held. An untouched idle GPU's counter is derived from bootEpoch.
func (d *Device) advance() {
	now := d.srv.now()
	if !d.primed {
		d.primed = true
		d.lastRead = now
		d.energy = uint64(now.Sub(bootEpoch).Milliseconds()) * uint64(d.idlePower) / 1000
		return
	}
	dt := now.Sub(d.lastRead)
	if dt <= 0 {
		return
	}
	if d.steady || d.workload == nil {
		// The same as the steps below, summed: whole seconds draw the
		// power exactly, the rest as its last step would.
		l := d.load(d.lastRead)
		whole, rest := int64(dt/time.Second), int64(dt%time.Second)
		d.energy += uint64(l.PowerMW)*uint64(whole) + uint64(l.PowerMW)*uint64(rest/1e3)/1e6
		d.counters.integrate(&l, dt)
		d.lastRead = now
		return
	}
	// Integrate in steps of at most one second so curves are followed
	// (in nanoseconds: a simulated fortnight is a million steps a GPU).
	t, end := d.lastRead.UnixNano(), d.lastRead.UnixNano()+int64(dt)
	for t < end {
		step := min(int64(time.Second), end-t)
		l := d.load(time.Unix(0, t).UTC())
		d.energy += uint64(l.PowerMW) * uint64(step/1e3) / 1e6
		d.counters.integrate(&l, time.Duration(step))
		t += step
	}
	d.lastRead = now
}

// guard is run at the start of every device call: it blocks while the
// server hangs and reports a lost GPU.
func (d *Device) guard() nvml.Return {
	if d.srv.opts.Hang || d.srv.hangNow.Load() {
		<-d.srv.hang
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost {
		return nvml.ERROR_GPU_IS_LOST
	}
	return nvml.SUCCESS
}

func (d *Device) current() Load {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.load(d.srv.now())
}

func (d *Device) install() {
	minor, uuid, name := d.Minor, d.UUID, d.Config.Name
	total := d.MemoryInfo.Total
	d.GetMinorNumberFunc = func() (int, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		return minor, nvml.SUCCESS
	}
	d.GetUUIDFunc = func() (string, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return "", r
		}
		return uuid, nvml.SUCCESS
	}
	d.GetNameFunc = func() (string, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return "", r
		}
		return name, nvml.SUCCESS
	}
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.advance()
		return d.energy, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return nvml.Utilization{}, r
		}
		l := d.current()
		return nvml.Utilization{Gpu: l.GPUUtil, Memory: l.MemUtil}, nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return nvml.Memory{}, r
		}
		used := d.current().MemUsedMiB << 20
		if used > total {
			used = total
		}
		return nvml.Memory{Total: total, Used: used, Free: total - used}, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		return d.current().PowerMW, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		return d.current().TempC, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		l := d.current()
		if c == nvml.CLOCK_MEM {
			return l.profile().MemClockMHz, nvml.SUCCESS
		}
		return l.SMClockMHz, nvml.SUCCESS
	}
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		return d.current().Throttle, nvml.SUCCESS
	}
	d.GetCurrentClocksEventReasonsFunc = d.GetCurrentClocksThrottleReasonsFunc
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return 0, r
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.eccTotal, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return nil, r
		}
		return append([]nvml.ProcessInfo(nil), d.current().Procs...), nvml.SUCCESS
	}
}

func returnString(r nvml.Return) string {
	switch r {
	case nvml.SUCCESS:
		return "Success"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost"
	case nvml.ERROR_NOT_SUPPORTED:
		return "Not Supported"
	case nvml.ERROR_NOT_FOUND:
		return "Not Found"
	case nvml.ERROR_INVALID_ARGUMENT:
		return "Invalid Argument"
	case nvml.ERROR_TIMEOUT:
		return "Timeout"
	default:
		return fmt.Sprintf("NVML error %d", int(r))
	}
}
