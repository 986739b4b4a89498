package gpu

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Device is one GPU as the agent keeps it between sample cycles.
type Device struct {
	Index       int
	Minor       int
	UUID        string
	Model       string
	MemTotalMiB uint64
	// Parent is the UUID of the GPU a MIG device lives on; "" for a
	// whole GPU. A MIG device has the parent's Index and Minor -1.
	Parent string
	// GI and CI are a MIG device's GPU and compute instance ids (-1 when
	// NVML did not give them), by which the hooks find its UUID.
	GI, CI int

	dev nvml.Device
	// parentDev is a MIG device's GPU: NVML reads an instance's GPM
	// through it (nvmlGpmMigSampleGet)
	parentDev nvml.Device
	// busy is set while a reading is in flight, so a GPU whose driver
	// hangs holds one goroutine, not one per cycle.
	busy atomic.Bool
	// unsupported remembers metrics NVML said it cannot give, so they are
	// reported missing without asking again every cycle.
	mu          sync.Mutex
	unsupported map[string]bool
	xids        uint64 // Xids the event watch has seen
	// x is the chosen catalogue metrics (Choose); nil: the fixed fields only
	x *chosen
}

// Handle is the device's NVML handle.
func (d *Device) Handle() nvml.Device { return d.dev }

// Reading is one sample of one GPU. A nil pointer is a value NVML did not
// give; Missing says why, as "metric: reason".
type Reading struct {
	Index       int
	Minor       int
	UUID        string
	Model       string
	Parent      string
	GPUUtil     *uint32
	MemUtil     *uint32
	MemUsedMiB  *uint64
	MemTotalMiB *uint64
	PowerMW     *uint32
	EnergyMJ    *uint64
	TempC       *uint32
	SMClockMHz  *uint32
	Throttle    *uint64
	ECCErrors   *uint64
	XIDErrors   *uint64
	// Metrics are the chosen catalogue metrics the GPU gave.
	Metrics map[string]float64
	// Procs are the running compute processes; ProcsOK says the list was
	// read (an empty list then means no process).
	Procs   []nvml.ProcessInfo
	ProcsOK bool
	Missing []string
	// Codes are the NVML error codes met, for the error counters.
	Codes []string
	// Lost is set when the GPU answered ERROR_GPU_IS_LOST.
	Lost bool
}

// Devices enumerates the GPUs. A GPU that cannot be identified is skipped
// and reported in the error list; the others are returned.
func (l *Library) Devices(ctx context.Context) ([]*Device, []error, error) {
	n, err := Call(ctx, l.Timeout, "nvmlDeviceGetCount", l.DeviceGetCount)
	if err != nil {
		return nil, nil, err
	}
	var devs []*Device
	var problems []error
	for i := 0; i < n; i++ {
		d, err := Call(ctx, l.Timeout, "nvmlDeviceGetHandleByIndex", func() (nvml.Device, nvml.Return) {
			return l.DeviceGetHandleByIndex(i)
		})
		if err != nil {
			problems = append(problems, fmt.Errorf("gpu %d: %w", i, err))
			continue
		}
		uuid, err := Call(ctx, l.Timeout, "nvmlDeviceGetUUID", d.GetUUID)
		if err != nil {
			problems = append(problems, fmt.Errorf("gpu %d: %w", i, err))
			continue
		}
		dv := &Device{Index: i, Minor: -1, UUID: uuid, dev: d, unsupported: map[string]bool{}}
		if m, err := Call(ctx, l.Timeout, "nvmlDeviceGetMinorNumber", d.GetMinorNumber); err == nil {
			dv.Minor = m
		}
		if name, err := Call(ctx, l.Timeout, "nvmlDeviceGetName", d.GetName); err == nil {
			dv.Model = name
		}
		if mem, err := Call(ctx, l.Timeout, "nvmlDeviceGetMemoryInfo", d.GetMemoryInfo); err == nil {
			dv.MemTotalMiB = mem.Total >> 20
		}
		devs = append(devs, dv)
		migs, err := l.migDevices(ctx, dv)
		if err != nil {
			problems = append(problems, fmt.Errorf("gpu %d: MIG devices: %w", i, err))
		}
		devs = append(devs, migs...)
	}
	return devs, problems, nil
}

// migDevices lists the MIG devices of a GPU in MIG mode; none when MIG is
// off or not supported.
func (l *Library) migDevices(ctx context.Context, parent *Device) ([]*Device, error) {
	type mode struct{ current, pending int }
	m, err := Call(ctx, l.Timeout, "nvmlDeviceGetMigMode", func() (mode, nvml.Return) {
		var v mode
		ret := safe(func() nvml.Return {
			var r nvml.Return
			v.current, v.pending, r = parent.dev.GetMigMode()
			return r
		})
		return v, ret
	})
	if err != nil || m.current != nvml.DEVICE_MIG_ENABLE {
		return nil, nil // no MIG on this GPU
	}
	max, err := Call(ctx, l.Timeout, "nvmlDeviceGetMaxMigDeviceCount", func() (int, nvml.Return) {
		var n int
		ret := safe(func() nvml.Return { var r nvml.Return; n, r = parent.dev.GetMaxMigDeviceCount(); return r })
		return n, ret
	})
	if err != nil {
		return nil, err
	}
	var out []*Device
	for i := 0; i < max; i++ {
		h, err := Call(ctx, l.Timeout, "nvmlDeviceGetMigDeviceHandleByIndex", func() (nvml.Device, nvml.Return) {
			var d nvml.Device
			ret := safe(func() nvml.Return { var r nvml.Return; d, r = parent.dev.GetMigDeviceHandleByIndex(i); return r })
			return d, ret
		})
		if err != nil {
			continue // an empty slot answers ERROR_NOT_FOUND
		}
		uuid, err := Call(ctx, l.Timeout, "nvmlDeviceGetUUID", h.GetUUID)
		if err != nil {
			return out, err
		}
		md := &Device{Index: parent.Index, Minor: -1, UUID: uuid, Parent: parent.UUID, dev: h, parentDev: parent.dev, unsupported: map[string]bool{}}
		if name, err := Call(ctx, l.Timeout, "nvmlDeviceGetName", h.GetName); err == nil {
			md.Model = name
		}
		if mem, err := Call(ctx, l.Timeout, "nvmlDeviceGetMemoryInfo", h.GetMemoryInfo); err == nil {
			md.MemTotalMiB = mem.Total >> 20
		}
		md.GI, md.CI = l.migIDs(ctx, h)
		out = append(out, md)
	}
	return out, nil
}

// SampleAll reads every device, one goroutine per GPU, and waits at most
// l.Timeout for all of them. A GPU that does not answer in time is
// reported with every metric missing ("timeout"); while its call is still
// stuck, later cycles do not start another.
func (l *Library) SampleAll(ctx context.Context, devs []*Device) []Reading {
	out := make([]Reading, len(devs))
	type result struct {
		i int
		r Reading
	}
	ch := make(chan result, len(devs))
	pending := 0
	for i, d := range devs {
		if !d.busy.CompareAndSwap(false, true) {
			out[i] = d.allMissing("timeout: previous NVML call still pending")
			continue
		}
		pending++
		go func(i int, d *Device) {
			r := d.read()
			d.busy.Store(false)
			ch <- result{i, r}
		}(i, d)
	}
	timer := time.NewTimer(l.Timeout)
	defer timer.Stop()
	done := make([]bool, len(devs))
	for pending > 0 {
		select {
		case res := <-ch:
			out[res.i] = res.r
			done[res.i] = true
			pending--
		case <-timer.C:
			pending = 0
		case <-ctx.Done():
			pending = 0
		}
	}
	for i, d := range devs {
		if !done[i] && out[i].UUID == "" {
			out[i] = d.allMissing(fmt.Sprintf("timeout: no answer within %s", l.Timeout))
		}
	}
	return out
}

var metricNames = []string{"gpu_util", "mem_util", "mem_used", "power", "energy", "temp", "sm_clock", "throttle", "ecc", "procs"}

func (d *Device) base() Reading {
	r := Reading{Index: d.Index, Minor: d.Minor, UUID: d.UUID, Model: d.Model, Parent: d.Parent}
	if d.MemTotalMiB > 0 {
		v := d.MemTotalMiB
		r.MemTotalMiB = &v
	}
	return r
}

func (d *Device) allMissing(reason string) Reading {
	r := d.base()
	for _, m := range metricNames {
		r.Missing = append(r.Missing, m+": "+reason)
	}
	d.mu.Lock()
	if d.x != nil {
		for _, m := range d.x.names {
			if _, no := d.x.unsupported[m]; !no {
				r.Missing = append(r.Missing, m+": "+reason)
			}
		}
	}
	d.mu.Unlock()
	r.Codes = append(r.Codes, "TIMEOUT")
	return r
}

// read does the NVML calls of one GPU in sequence. After ERROR_GPU_IS_LOST
// the remaining metrics are marked lost without further calls.
func (d *Device) read() Reading {
	r := d.base()
	try := func(metric string, f func() nvml.Return) {
		if r.Lost {
			r.Missing = append(r.Missing, metric+": "+RetName(nvml.ERROR_GPU_IS_LOST))
			return
		}
		d.mu.Lock()
		skip := d.unsupported[metric]
		d.mu.Unlock()
		if skip {
			r.Missing = append(r.Missing, metric+": "+RetName(nvml.ERROR_NOT_SUPPORTED))
			return
		}
		ret := safe(f)
		if ret == nvml.SUCCESS {
			return
		}
		r.Missing = append(r.Missing, metric+": "+RetName(ret))
		r.Codes = append(r.Codes, RetName(ret))
		switch ret {
		case nvml.ERROR_GPU_IS_LOST:
			r.Lost = true
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			d.mu.Lock()
			d.unsupported[metric] = true
			d.mu.Unlock()
		}
	}
	dev := d.dev
	try("gpu_util", func() nvml.Return {
		u, ret := dev.GetUtilizationRates()
		if ret == nvml.SUCCESS {
			g, m := u.Gpu, u.Memory
			r.GPUUtil, r.MemUtil = &g, &m
		}
		return ret
	})
	if r.GPUUtil == nil {
		// one call gives both; mem_util is missing for the same reason
		_, why, _ := cutLast(r.Missing)
		r.Missing = append(r.Missing, "mem_util: "+why)
	}
	try("mem_used", func() nvml.Return {
		// v2 leaves the driver's reserved memory out of "used", as
		// nvidia-smi does; v1 (older drivers) counts it
		m, ret := dev.GetMemoryInfo_v2()
		if ret == nvml.SUCCESS {
			used, total := m.Used>>20, m.Total>>20
			r.MemUsedMiB, r.MemTotalMiB = &used, &total
			return ret
		}
		if ret != nvml.ERROR_FUNCTION_NOT_FOUND && ret != nvml.ERROR_NOT_SUPPORTED && ret != nvml.ERROR_ARGUMENT_VERSION_MISMATCH {
			return ret
		}
		m1, ret := dev.GetMemoryInfo()
		if ret == nvml.SUCCESS {
			used, total := m1.Used>>20, m1.Total>>20
			r.MemUsedMiB, r.MemTotalMiB = &used, &total
		}
		return ret
	})
	try("power", func() nvml.Return { return readInto(&r.PowerMW, dev.GetPowerUsage) })
	try("energy", func() nvml.Return { return readInto(&r.EnergyMJ, dev.GetTotalEnergyConsumption) })
	try("temp", func() nvml.Return {
		return readInto(&r.TempC, func() (uint32, nvml.Return) { return dev.GetTemperature(nvml.TEMPERATURE_GPU) })
	})
	try("sm_clock", func() nvml.Return {
		return readInto(&r.SMClockMHz, func() (uint32, nvml.Return) { return dev.GetClockInfo(nvml.CLOCK_SM) })
	})
	try("throttle", func() nvml.Return {
		t, ret := dev.GetCurrentClocksEventReasons()
		if ret == nvml.ERROR_FUNCTION_NOT_FOUND {
			// drivers before r535 know only the older name
			t, ret = dev.GetCurrentClocksThrottleReasons()
		}
		if ret == nvml.SUCCESS {
			r.Throttle = &t
		}
		return ret
	})
	try("ecc", func() nvml.Return {
		return readInto(&r.ECCErrors, func() (uint64, nvml.Return) {
			return dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)
		})
	})
	try("procs", func() nvml.Return {
		p, ret := dev.GetComputeRunningProcesses()
		if ret == nvml.SUCCESS {
			r.Procs, r.ProcsOK = p, true
		}
		return ret
	})
	if !r.Lost {
		d.readMetrics(&r)
	}
	return r
}

// safe turns a panic of a binding (a mock without the method, a missing
// symbol) into ERROR_FUNCTION_NOT_FOUND instead of killing the daemon.
func safe(f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

// Reinit shuts NVML down and initialises it again, as needed after a
// driver reload invalidated every handle.
func (l *Library) Reinit(ctx context.Context) error {
	_, _ = Call(ctx, l.Timeout, "nvmlShutdown", func() (struct{}, nvml.Return) {
		return struct{}{}, safe(l.Shutdown)
	})
	_, err := Call(ctx, l.Timeout, "nvmlInit", func() (struct{}, nvml.Return) {
		return struct{}{}, initSafely(l.Interface)
	})
	return err
}

func cutLast(missing []string) (string, string, bool) {
	if len(missing) == 0 {
		return "", "unknown", false
	}
	last := missing[len(missing)-1]
	for i := 0; i+1 < len(last); i++ {
		if last[i] == ':' && last[i+1] == ' ' {
			return last[:i], last[i+2:], true
		}
	}
	return last, "unknown", false
}

// readInto sets *dst to what read gives when NVML says SUCCESS, and
// returns what NVML said.
func readInto[T any](dst **T, read func() (T, nvml.Return)) nvml.Return {
	v, ret := read()
	if ret == nvml.SUCCESS {
		*dst = &v
	}
	return ret
}
