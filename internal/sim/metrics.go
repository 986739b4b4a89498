package sim

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The simulated GPUs' chosen metrics: clocks, field values (throttle
// time, memory temperature, NVLink and ECC counters), PCIe throughput and
// GPM. A workload that sets none of a Load's profiling fields has them
// derived from its utilization (profile), so every workload has them. The
// a100 has no GPM, as the real one: its GPM metrics are unsupported.

// Profile is what GPM and the traffic counters see of a load.
type Profile struct {
	SMActivePct, SMOccupancyPct, TensorPct         float64
	FP64Pct, FP32Pct, FP16Pct, DRAMPct             float64
	PCIeTxBps, PCIeRxBps, NVLinkTxBps, NVLinkRxBps float64
	MemClockMHz, MemTempC                          uint32
}

// gpmMetrics are the GPM metrics the simulator answers, each with its
// field of the Profile and that field's amount per unit NVML reports
// (bandwidths are kept in bytes/s, reported in MiB/s).
var gpmMetrics = []struct {
	id    nvml.GpmMetricId
	field func(*Profile) *float64
	unit  float64
}{
	{nvml.GPM_METRIC_SM_UTIL, func(p *Profile) *float64 { return &p.SMActivePct }, 1},
	{nvml.GPM_METRIC_SM_OCCUPANCY, func(p *Profile) *float64 { return &p.SMOccupancyPct }, 1},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, func(p *Profile) *float64 { return &p.TensorPct }, 1},
	{nvml.GPM_METRIC_FP64_UTIL, func(p *Profile) *float64 { return &p.FP64Pct }, 1},
	{nvml.GPM_METRIC_FP32_UTIL, func(p *Profile) *float64 { return &p.FP32Pct }, 1},
	{nvml.GPM_METRIC_FP16_UTIL, func(p *Profile) *float64 { return &p.FP16Pct }, 1},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, func(p *Profile) *float64 { return &p.DRAMPct }, 1},
	{nvml.GPM_METRIC_PCIE_TX_PER_SEC, func(p *Profile) *float64 { return &p.PCIeTxBps }, 1 << 20},
	{nvml.GPM_METRIC_PCIE_RX_PER_SEC, func(p *Profile) *float64 { return &p.PCIeRxBps }, 1 << 20},
	{nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, func(p *Profile) *float64 { return &p.NVLinkTxBps }, 1 << 20},
	{nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, func(p *Profile) *float64 { return &p.NVLinkRxBps }, 1 << 20},
}

// nvlinkPerUtil is the NVLink traffic each way, bytes/s, per percent of
// utilization, where a load has no profile of its own.
const nvlinkPerUtil = 3e9

// profile is l's Profile, derived from utilization when the workload set
// none.
func (l Load) profile() Profile {
	if l.Profile != nil {
		return *l.Profile
	}
	u := float64(l.GPUUtil)
	tx, rx := l.nvlink()
	p := Profile{
		SMActivePct: u * 0.9, SMOccupancyPct: u * 0.45, TensorPct: u * 0.6,
		FP32Pct: u * 0.2, FP16Pct: u * 0.4, DRAMPct: float64(l.MemUtil),
		PCIeTxBps: u * 2e7, PCIeRxBps: u * 1e8, NVLinkTxBps: tx, NVLinkRxBps: rx,
		MemClockMHz: 1593, MemTempC: l.TempC + 5,
	}
	if l.GPUUtil > 0 {
		p.MemClockMHz = 2619
	}
	return p
}

// nvlink is l's NVLink traffic, bytes/s each way: its profile's, or
// derived from utilization. integrate asks it for every simulated second
// of every GPU, without building the rest of the profile.
func (l Load) nvlink() (tx, rx float64) {
	if l.Profile != nil {
		return l.Profile.NVLinkTxBps, l.Profile.NVLinkRxBps
	}
	v := float64(l.GPUUtil) * nvlinkPerUtil
	return v, v
}

// throttled says whether l's clocks are held down for power or heat.
func (l Load) throttled() (power, thermal bool) {
	t := l.Throttle
	return t&(nvml.ClocksEventReasonSwPowerCap|nvml.ClocksThrottleReasonHwPowerBrakeSlowdown) != 0,
		t&(nvml.ClocksEventReasonSwThermalSlowdown|nvml.ClocksThrottleReasonHwThermalSlowdown) != 0
}

// counters are the cumulative counters a simulated GPU keeps besides
// energy, integrated by advance.
type counters struct {
	nvlinkTxKiB, nvlinkRxKiB float64
	powerNS, thermalNS       float64
}

// integrate adds step of load l to the counters. Called with d.mu held.
func (c *counters) integrate(l *Load, step time.Duration) {
	tx, rx := l.nvlink()
	s := step.Seconds()
	c.nvlinkTxKiB += tx * s / 1024
	c.nvlinkRxKiB += rx * s / 1024
	power, thermal := l.throttled()
	if power {
		c.powerNS += float64(step.Nanoseconds())
	}
	if thermal {
		c.thermalNS += float64(step.Nanoseconds())
	}
}

func (d *Device) hasGPM() bool { return d.Config.Architecture != nvml.DEVICE_ARCH_AMPERE }

// GetMaxClockInfo implements nvml.Device.
func (d *Device) GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return) {
	if r := d.guard(); r != nvml.SUCCESS {
		return 0, r
	}
	return 1980, nvml.SUCCESS
}

// GetPcieThroughput implements nvml.Device: KiB/s.
func (d *Device) GetPcieThroughput(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
	if r := d.guard(); r != nvml.SUCCESS {
		return 0, r
	}
	p := d.current().profile()
	if c == nvml.PCIE_UTIL_TX_BYTES {
		return uint32(p.PCIeTxBps / 1024), nvml.SUCCESS
	}
	return uint32(p.PCIeRxBps / 1024), nvml.SUCCESS
}

// GetFieldValues implements nvml.Device for the fields gpusuite reads;
// others answer ERROR_NOT_SUPPORTED in their own NvmlReturn.
func (d *Device) GetFieldValues(vals []nvml.FieldValue) nvml.Return {
	if r := d.guard(); r != nvml.SUCCESS {
		return r
	}
	d.mu.Lock()
	d.advance()
	now := d.srv.now()
	l := d.load(now)
	c := d.counters
	ecc := d.eccTotal
	sbe := d.sbeTotal
	d.mu.Unlock()
	for i := range vals {
		v := &vals[i]
		v.Timestamp = now.UnixMicro()
		v.NvmlReturn = uint32(nvml.SUCCESS)
		v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
		var n uint64
		switch v.FieldId {
		case nvml.FI_DEV_PERF_POLICY_POWER:
			n = uint64(c.powerNS)
		case nvml.FI_DEV_PERF_POLICY_THERMAL:
			n = uint64(c.thermalNS)
		case nvml.FI_DEV_MEMORY_TEMP:
			n = uint64(l.profile().MemTempC)
			v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
		case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
			n = uint64(c.nvlinkTxKiB)
		case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
			n = uint64(c.nvlinkRxKiB)
		case nvml.FI_DEV_ECC_SBE_VOL_TOTAL:
			n = sbe
		case nvml.FI_DEV_ECC_DBE_VOL_TOTAL:
			n = ecc
		default:
			v.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
		}
		binary.LittleEndian.PutUint64(v.Value[:], n)
	}
	return nvml.SUCCESS
}

// gpmSample is a simulated GPM sample: the moment it was taken.
type gpmSample struct {
	dev *Device
	mig *MIGDevice // a GPU instance's sample (nvmlGpmMigSampleGet)
	t   time.Time
}

func (g *gpmSample) Free() nvml.Return             { return nvml.SUCCESS }
func (g *gpmSample) Get(d nvml.Device) nvml.Return { return d.GpmSampleGet(g) }
func (g *gpmSample) MigGet(d nvml.Device, gi int) nvml.Return {
	return d.GpmMigSampleGet(gi, g)
}

// GpmQueryDeviceSupport implements nvml.Device.
func (d *Device) GpmQueryDeviceSupport() (nvml.GpmSupport, nvml.Return) {
	if r := d.guard(); r != nvml.SUCCESS {
		return nvml.GpmSupport{}, r
	}
	s := nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION}
	if d.hasGPM() {
		s.IsSupportedDevice = 1
	}
	return s, nvml.SUCCESS
}

// GpmSampleGet implements nvml.Device.
func (d *Device) GpmSampleGet(s nvml.GpmSample) nvml.Return { return d.gpmTake(s, nil) }

// gpmTake stamps s as a GPM sample of the GPU, or of its GPU instance
// mig (nvmlGpmMigSampleGet, miglayout.go).
func (d *Device) gpmTake(s nvml.GpmSample, mig *MIGDevice) nvml.Return {
	if r := d.guard(); r != nvml.SUCCESS {
		return r
	}
	if !d.hasGPM() {
		return nvml.ERROR_NOT_SUPPORTED
	}
	g, ok := s.(*gpmSample)
	if !ok {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	g.dev, g.mig, g.t = d, mig, d.srv.now()
	return nvml.SUCCESS
}

// GpmSampleAlloc implements nvml.Interface.
func (s *Server) GpmSampleAlloc() (nvml.GpmSample, nvml.Return) { return &gpmSample{}, nvml.SUCCESS }

// GpmMetricsGet implements nvml.Interface: each metric averaged over the
// workload between the two samples.
func (s *Server) GpmMetricsGet(m *nvml.GpmMetricsGetType) nvml.Return {
	a, ok1 := m.Sample1.(*gpmSample)
	b, ok2 := m.Sample2.(*gpmSample)
	if !ok1 || !ok2 || a.dev == nil || a.dev != b.dev || a.mig != b.mig || !b.t.After(a.t) {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	d := a.dev
	const steps = 16
	var sum Profile
	if a.mig != nil {
		sum = a.mig.profile() // an instance's activity is held, not a workload
	} else {
		dt := b.t.Sub(a.t) / steps
		d.mu.Lock()
		for i := 0; i < steps; i++ {
			p := d.load(a.t.Add(dt*time.Duration(i) + dt/2)).profile()
			for _, gm := range gpmMetrics {
				*gm.field(&sum) += *gm.field(&p) / steps
			}
		}
		d.mu.Unlock()
	}
	for i := 0; i < int(m.NumMetrics) && i < len(m.Metrics); i++ {
		g := &m.Metrics[i]
		g.Value, g.NvmlReturn = math.NaN(), uint32(nvml.ERROR_NOT_SUPPORTED)
		for _, gm := range gpmMetrics {
			if gm.id == nvml.GpmMetricId(g.MetricId) {
				g.Value, g.NvmlReturn = *gm.field(&sum)/gm.unit, uint32(nvml.SUCCESS)
				break
			}
		}
	}
	return nvml.SUCCESS
}
