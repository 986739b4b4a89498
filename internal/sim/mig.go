package sim

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// MIGDevice is one MIG instance of a simulated GPU. As on real GPUs, it
// reports its memory and processes; utilization, power, energy,
// temperature, clocks and ECC are the parent's business and answer
// ERROR_NOT_SUPPORTED.
type MIGDevice struct {
	mock.Device
	parent *Device
	uuid   string
	name   string
	total  uint64
	// gi, ci are the instance's GPU and compute instance ids (miglayout.go)
	gi, ci int

	mu    sync.Mutex
	procs []nvml.ProcessInfo
	// activity is what GPM sees of the instance (SetActivity)
	activity Profile
}

// SetActivity sets what GPM reads of the instance through its GPU
// (nvmlGpmMigSampleGet), on GPUs with GPM (Hopper on): SM and tensor
// activity and the rest of a Profile, held until set again.
func (m *MIGDevice) SetActivity(p Profile) {
	m.mu.Lock()
	m.activity = p
	m.mu.Unlock()
}

func (m *MIGDevice) profile() Profile {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.activity
}

// EnableMIG puts the GPU in MIG mode with n equal instances and returns
// them. The parent's utilization then answers ERROR_NOT_SUPPORTED, as
// NVML's does in MIG mode.
func (d *Device) EnableMIG(n int) []*MIGDevice {
	total := d.MemoryInfo.Total / uint64(n)
	var out []*MIGDevice
	for i := 0; i < n; i++ {
		m := &MIGDevice{
			parent: d, total: total, gi: i + 1, uuid: MIGUUID(d.UUID, i),
			name: fmt.Sprintf("%s MIG %dg.%dgb", d.Config.Name, 7/n, total>>30),
		}
		out = append(out, m)
	}
	d.installMIG(out)
	return out
}

// SetProcs sets the compute processes running in the instance.
func (m *MIGDevice) SetProcs(p []nvml.ProcessInfo) {
	m.mu.Lock()
	m.procs = append([]nvml.ProcessInfo(nil), p...)
	m.mu.Unlock()
}

// UUID is the instance's MIG UUID.
func (m *MIGDevice) UUID() string { return m.uuid }

func (m *MIGDevice) used() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var u uint64
	for _, p := range m.procs {
		u += p.UsedGpuMemory
	}
	return min(u, m.total)
}

// GetUUID implements nvml.Device.
func (m *MIGDevice) GetUUID() (string, nvml.Return) { return m.uuid, m.parent.guard() }

// GetName implements nvml.Device.
func (m *MIGDevice) GetName() (string, nvml.Return) { return m.name, m.parent.guard() }

// GetMemoryInfo implements nvml.Device.
func (m *MIGDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	u := m.used()
	return nvml.Memory{Total: m.total, Used: u, Free: m.total - u}, m.parent.guard()
}

// GetMemoryInfo_v2 implements nvml.Device.
func (m *MIGDevice) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	u := m.used()
	return nvml.Memory_v2{Total: m.total, Used: u, Free: m.total - u}, m.parent.guard()
}

// GetComputeRunningProcesses implements nvml.Device.
func (m *MIGDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	if r := m.parent.guard(); r != nvml.SUCCESS {
		return nil, r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]nvml.ProcessInfo(nil), m.procs...), nvml.SUCCESS
}

func (m *MIGDevice) notSupported() nvml.Return {
	if r := m.parent.guard(); r != nvml.SUCCESS {
		return r
	}
	return nvml.ERROR_NOT_SUPPORTED
}

// GetMinorNumber implements nvml.Device: MIG instances have no device minor.
func (m *MIGDevice) GetMinorNumber() (int, nvml.Return) { return 0, m.notSupported() }

// GetUtilizationRates implements nvml.Device.
func (m *MIGDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return nvml.Utilization{}, m.notSupported()
}

// GetPowerUsage implements nvml.Device.
func (m *MIGDevice) GetPowerUsage() (uint32, nvml.Return) { return 0, m.notSupported() }

// GetTotalEnergyConsumption implements nvml.Device.
func (m *MIGDevice) GetTotalEnergyConsumption() (uint64, nvml.Return) { return 0, m.notSupported() }

// GetTemperature implements nvml.Device.
func (m *MIGDevice) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	return 0, m.notSupported()
}

// GetClockInfo implements nvml.Device.
func (m *MIGDevice) GetClockInfo(nvml.ClockType) (uint32, nvml.Return) { return 0, m.notSupported() }

// GetCurrentClocksEventReasons implements nvml.Device.
func (m *MIGDevice) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	return 0, m.notSupported()
}

// GetTotalEccErrors implements nvml.Device.
func (m *MIGDevice) GetTotalEccErrors(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
	return 0, m.notSupported()
}

// GetMigMode implements nvml.Device: an instance is not itself in MIG mode.
func (m *MIGDevice) GetMigMode() (int, int, nvml.Return) { return 0, 0, m.notSupported() }
