package sim

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// go-nvml's generated mocks record every call in an ever-growing slice.
// A daemon samples millions of times, so the methods called per sample
// cycle call the installed functions directly, recording nothing.

// GetUtilizationRates implements nvml.Device without call recording.
func (d *Device) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return d.GetUtilizationRatesFunc()
}

// GetMemoryInfo implements nvml.Device without call recording.
func (d *Device) GetMemoryInfo() (nvml.Memory, nvml.Return) { return d.GetMemoryInfoFunc() }

// GetMemoryInfo_v2 implements nvml.Device without call recording; the
// simulated driver reserves nothing.
func (d *Device) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	m, r := d.GetMemoryInfoFunc()
	return nvml.Memory_v2{Version: nvml.STRUCT_VERSION(nvml.Memory_v2{}, 2), Total: m.Total, Free: m.Free, Used: m.Used}, r
}

// GetPowerUsage implements nvml.Device without call recording.
func (d *Device) GetPowerUsage() (uint32, nvml.Return) { return d.GetPowerUsageFunc() }

// GetTotalEnergyConsumption implements nvml.Device without call recording.
func (d *Device) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	return d.GetTotalEnergyConsumptionFunc()
}

// GetTemperature implements nvml.Device without call recording.
func (d *Device) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	return d.GetTemperatureFunc(s)
}

// GetClockInfo implements nvml.Device without call recording.
func (d *Device) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) { return d.GetClockInfoFunc(c) }

// GetCurrentClocksEventReasons implements nvml.Device without call recording.
func (d *Device) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	return d.GetCurrentClocksEventReasonsFunc()
}

// GetCurrentClocksThrottleReasons implements nvml.Device without call recording.
func (d *Device) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	return d.GetCurrentClocksThrottleReasonsFunc()
}

// GetTotalEccErrors implements nvml.Device without call recording.
func (d *Device) GetTotalEccErrors(m nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
	return d.GetTotalEccErrorsFunc(m, c)
}

// GetComputeRunningProcesses implements nvml.Device without call recording.
func (d *Device) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return d.GetComputeRunningProcessesFunc()
}

// GetUUID implements nvml.Device without call recording.
func (d *Device) GetUUID() (string, nvml.Return) { return d.GetUUIDFunc() }

// GetName implements nvml.Device without call recording.
func (d *Device) GetName() (string, nvml.Return) { return d.GetNameFunc() }

// GetMinorNumber implements nvml.Device without call recording.
func (d *Device) GetMinorNumber() (int, nvml.Return) { return d.GetMinorNumberFunc() }

// DeviceGetHandleByUUID implements nvml.Interface without call recording.
func (s *Server) DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return) {
	return s.DeviceGetHandleByUUIDFunc(uuid)
}

// DeviceGetHandleByIndex implements nvml.Interface without call recording.
func (s *Server) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return s.DeviceGetHandleByIndexFunc(i)
}

// DeviceGetCount implements nvml.Interface without call recording.
func (s *Server) DeviceGetCount() (int, nvml.Return) { return s.DeviceGetCountFunc() }

// eventSet is an XID event set that records nothing either.
type eventSet struct {
	mock.EventSet
	wait func(uint32) (nvml.EventData, nvml.Return)
}

func (e *eventSet) Wait(ms uint32) (nvml.EventData, nvml.Return) { return e.wait(ms) }
func (e *eventSet) Free() nvml.Return                            { return nvml.SUCCESS }
