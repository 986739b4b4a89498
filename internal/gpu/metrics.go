package gpu

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/aicloud/gpusuite/internal/record"
)

// The chosen catalogue metrics (internal/record's Catalogue) of one GPU: clocks
// through nvmlDeviceGetClockInfo, counters through one
// nvmlDeviceGetFieldValues call, and on GPUs with GPM (Hopper on) the
// profiling metrics through nvmlGpmSampleGet/nvmlGpmMetricsGet over the
// time since the last reading. A metric the GPU cannot give is kept as
// unsupported with the reason (Unsupported) and not asked again; one that
// failed this time is named in Missing; neither is ever 0.

// allLinks as a field's scope sums a NVLink counter over every link.
const allLinks = math.MaxUint32

// fieldKind says how a field value becomes a metric.
type fieldKind int

const (
	gauge   fieldKind = iota // the value as it is
	pctOfNS                  // a nanosecond counter: share of the time since the last reading, percent
	kibRate                  // a KiB counter: bytes per second since the last reading
)

type fieldSource struct {
	id   uint32
	kind fieldKind
}

var fieldSources = map[string]fieldSource{
	"power_throttle_pct":    {nvml.FI_DEV_PERF_POLICY_POWER, pctOfNS},
	"thermal_throttle_pct":  {nvml.FI_DEV_PERF_POLICY_THERMAL, pctOfNS},
	"mem_temp_c":            {nvml.FI_DEV_MEMORY_TEMP, gauge},
	"nvlink_tx_bytes_per_s": {nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, kibRate},
	"nvlink_rx_bytes_per_s": {nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, kibRate},
	"ecc_sbe_volatile":      {nvml.FI_DEV_ECC_SBE_VOL_TOTAL, gauge},
	"ecc_dbe_volatile":      {nvml.FI_DEV_ECC_DBE_VOL_TOTAL, gauge},
}

// gpmSource is a GPM metric with the factor to the catalogue's unit.
type gpmSource struct {
	id    nvml.GpmMetricId
	scale float64
}

const mib = 1 << 20

var gpmSources = map[string]gpmSource{
	"sm_active_pct":     {nvml.GPM_METRIC_SM_UTIL, 1},
	"sm_occupancy_pct":  {nvml.GPM_METRIC_SM_OCCUPANCY, 1},
	"tensor_active_pct": {nvml.GPM_METRIC_ANY_TENSOR_UTIL, 1},
	"fp64_active_pct":   {nvml.GPM_METRIC_FP64_UTIL, 1},
	"fp32_active_pct":   {nvml.GPM_METRIC_FP32_UTIL, 1},
	"fp16_active_pct":   {nvml.GPM_METRIC_FP16_UTIL, 1},
	"dram_active_pct":   {nvml.GPM_METRIC_DRAM_BW_UTIL, 1},
	// with GPM, PCIe and NVLink traffic are averaged over the interval
	// (MiB/s), not taken from a 20 ms window or summed link counters
	"pcie_tx_bytes_per_s":   {nvml.GPM_METRIC_PCIE_TX_PER_SEC, mib},
	"pcie_rx_bytes_per_s":   {nvml.GPM_METRIC_PCIE_RX_PER_SEC, mib},
	"nvlink_tx_bytes_per_s": {nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, mib},
	"nvlink_rx_bytes_per_s": {nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, mib},
}

// Reasons a metric is unsupported besides an NVML return code.
const (
	reasonNoGPM = "GPM not supported by this GPU"
	reasonMIG   = "GPM is not read on a MIG device whose GPU instance is unknown"
)

// chosen is what one device reads beyond the fixed fields. Only read (one
// reading at a time, under Device.busy) touches it after Choose.
type chosen struct {
	names []string
	// fields are the field-value metrics in one call's order
	fields      []nvml.FieldValue
	fieldNames  []string
	prev        map[uint32]counterReading
	clocks      []string
	smMax       uint32   // the SM clock's maximum once read: it does not change
	pcieWindow  []string // PCIe from nvmlDeviceGetPcieThroughput (no GPM)
	gpm         *gpmState
	unsupported map[string]string
}

type counterReading struct {
	v  uint64
	us int64 // the driver's timestamp, microseconds
}

type gpmState struct {
	lib     nvml.Interface
	samples [2]nvml.GpmSample
	have    bool // samples[0] holds the last reading
	names   []string
	get     *nvml.GpmMetricsGetType
}

// NoEarlier is why a rate metric (a counter over the time since the last
// reading, or GPM) is missing from a GPU's first reading.
const NoEarlier = "no earlier reading"

// Choose sets the catalogue metrics each device reads from now on; GPM
// support is asked now, what else a GPU cannot give is met at its first
// reading. The rate metrics start at the second reading.
func (l *Library) Choose(devs []*Device, names []string) {
	for _, d := range devs {
		d.choose(l.Interface, names)
	}
}

func (d *Device) choose(lib nvml.Interface, names []string) {
	c := &chosen{names: names, prev: map[uint32]counterReading{}, unsupported: map[string]string{}}
	// GPM is asked about once, and only when a chosen metric may come from
	// it: the default set asks the driver nothing at each enumeration.
	asked, gpmOK, why := false, false, ""
	gpm := func() bool {
		if !asked {
			gpmOK, why = d.gpmSupport()
			asked = true
		}
		return gpmOK
	}
	for _, n := range names {
		if _, ok := gpmSources[n]; ok && gpm() {
			if c.gpm == nil {
				c.gpm = &gpmState{lib: lib, get: &nvml.GpmMetricsGetType{}}
			}
			c.gpm.names = append(c.gpm.names, n)
			continue
		}
		if record.MetricSet(n) == record.SetGPM { // no other source gives them
			gpm() // the reason
			c.unsupported[n] = why
			continue
		}
		switch n {
		case "graphics_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz":
			c.clocks = append(c.clocks, n)
		case "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s":
			c.pcieWindow = append(c.pcieWindow, n)
		default:
			if f, ok := fieldSources[n]; ok {
				fv := nvml.FieldValue{FieldId: f.id}
				if f.kind == kibRate {
					fv.ScopeId = allLinks
				}
				c.fields = append(c.fields, fv)
				c.fieldNames = append(c.fieldNames, n)
			}
		}
	}
	d.mu.Lock()
	if d.x != nil {
		d.x.free()
	}
	d.x = c
	d.mu.Unlock()
}

// gpmSupport asks whether GPM can be read on the device.
func (d *Device) gpmSupport() (bool, string) {
	dev := d.dev
	if d.Parent != "" {
		// a MIG instance's GPM is its GPU's, read per GPU instance
		if d.parentDev == nil || d.GI < 0 {
			return false, reasonMIG
		}
		dev = d.parentDev
	}
	var s nvml.GpmSupport
	ret := safe(func() nvml.Return { var r nvml.Return; s, r = dev.GpmQueryDeviceSupport(); return r })
	if ret != nvml.SUCCESS {
		return false, RetName(ret)
	}
	if s.IsSupportedDevice == 0 {
		return false, reasonNoGPM
	}
	return true, ""
}

func (c *chosen) free() {
	if c.gpm == nil {
		return
	}
	for _, s := range c.gpm.samples {
		if s != nil {
			_ = safe(func() nvml.Return { return s.Free() })
		}
	}
}

// Unsupported lists the chosen metrics the GPU cannot give, as
// "metric: reason", sorted; nil when it gives them all.
func (d *Device) Unsupported() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.x == nil || len(d.x.unsupported) == 0 {
		return nil
	}
	out := make([]string, 0, len(d.x.unsupported))
	for n, why := range d.x.unsupported {
		out = append(out, n+": "+why)
	}
	sort.Strings(out)
	return out
}

// readMetrics reads the chosen metrics into r.Metrics. Called from read,
// so one reading at a time per device.
func (d *Device) readMetrics(r *Reading) {
	d.mu.Lock()
	c := d.x
	d.mu.Unlock()
	if c == nil || len(c.names) == 0 {
		return
	}
	m := make(map[string]float64, len(c.names))
	r.Metrics = m
	miss := func(name string, ret nvml.Return) {
		switch ret {
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND, nvml.ERROR_INVALID_ARGUMENT:
			// a permanent property of the GPU or driver: said in this
			// reading and in every later segment's header, never asked
			// again
			d.mu.Lock()
			c.unsupported[name] = RetName(ret)
			d.mu.Unlock()
			r.Missing = append(r.Missing, name+": "+RetName(ret))
		default:
			r.Missing = append(r.Missing, name+": "+RetName(ret))
			r.Codes = append(r.Codes, RetName(ret))
			if ret == nvml.ERROR_GPU_IS_LOST {
				r.Lost = true
			}
		}
	}
	put := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			r.Missing = append(r.Missing, name+": not a number")
			return
		}
		m[name] = v
	}
	supported := func(name string) bool {
		d.mu.Lock()
		_, no := c.unsupported[name]
		d.mu.Unlock()
		return !no && !r.Lost
	}
	dev := d.dev
	for _, n := range c.clocks {
		if !supported(n) {
			continue
		}
		if n == "sm_clock_max_mhz" && c.smMax != 0 {
			put(n, float64(c.smMax))
			continue
		}
		var v uint32
		ret := safe(func() nvml.Return {
			var r nvml.Return
			switch n {
			case "graphics_clock_mhz":
				v, r = dev.GetClockInfo(nvml.CLOCK_GRAPHICS)
			case "mem_clock_mhz":
				v, r = dev.GetClockInfo(nvml.CLOCK_MEM)
			default:
				v, r = dev.GetMaxClockInfo(nvml.CLOCK_SM)
			}
			return r
		})
		if ret != nvml.SUCCESS {
			miss(n, ret)
			continue
		}
		if n == "sm_clock_max_mhz" {
			c.smMax = v
		}
		put(n, float64(v))
	}
	for _, n := range c.pcieWindow {
		if !supported(n) {
			continue
		}
		counter := nvml.PCIE_UTIL_TX_BYTES
		if n == "pcie_rx_bytes_per_s" {
			counter = nvml.PCIE_UTIL_RX_BYTES
		}
		var v uint32
		ret := safe(func() nvml.Return { var r nvml.Return; v, r = dev.GetPcieThroughput(counter); return r })
		if ret != nvml.SUCCESS {
			miss(n, ret)
			continue
		}
		put(n, float64(v)*1024) // KiB/s over the driver's 20 ms window
	}
	d.readFields(c, r, miss, put, supported)
	d.readGPM(c, r, miss, put, supported)
}

func (d *Device) readFields(c *chosen, r *Reading, miss func(string, nvml.Return), put func(string, float64), supported func(string) bool) {
	if len(c.fields) == 0 || r.Lost {
		return
	}
	vals := c.fields[:0:0]
	var names []string
	for i, n := range c.fieldNames {
		if supported(n) {
			vals = append(vals, nvml.FieldValue{FieldId: c.fields[i].FieldId, ScopeId: c.fields[i].ScopeId})
			names = append(names, n)
		}
	}
	if len(vals) == 0 {
		return
	}
	ret := safe(func() nvml.Return { return d.dev.GetFieldValues(vals) })
	if ret != nvml.SUCCESS {
		for _, n := range names {
			miss(n, ret)
		}
		return
	}
	for i, fv := range vals {
		n := names[i]
		if fr := nvml.Return(fv.NvmlReturn); fr != nvml.SUCCESS {
			miss(n, fr)
			continue
		}
		v, ok := fieldNumber(fv)
		if !ok {
			r.Missing = append(r.Missing, n+": unknown value type")
			continue
		}
		src := fieldSources[n]
		if src.kind == gauge {
			put(n, v)
			continue
		}
		cur := counterReading{v: uint64(v), us: fv.Timestamp}
		key := fv.FieldId
		last, had := c.prev[key]
		c.prev[key] = cur
		switch {
		case !had:
			r.Missing = append(r.Missing, n+": "+NoEarlier)
			continue
		case cur.v < last.v || cur.us <= last.us:
			r.Missing = append(r.Missing, n+": counter reset")
			continue
		}
		dt := float64(cur.us-last.us) / 1e6
		switch src.kind {
		case pctOfNS:
			put(n, min(100, float64(cur.v-last.v)/1e9/dt*100))
		case kibRate:
			put(n, float64(cur.v-last.v)*1024/dt)
		}
	}
}

// fieldNumber decodes a field value as NVML typed it.
func fieldNumber(fv nvml.FieldValue) (float64, bool) {
	b := fv.Value[:]
	switch nvml.ValueType(fv.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.LittleEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.LittleEndian.Uint64(b))), true
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.LittleEndian.Uint32(b))), true
	}
	return 0, false
}

func (d *Device) readGPM(c *chosen, r *Reading, miss func(string, nvml.Return), put func(string, float64), supported func(string) bool) {
	g := c.gpm
	if g == nil || r.Lost {
		return
	}
	var names []string
	for _, n := range g.names {
		if supported(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	fail := func(ret nvml.Return) {
		for _, n := range names {
			miss(n, ret)
		}
	}
	for i := range g.samples {
		if g.samples[i] == nil {
			var s nvml.GpmSample
			ret := safe(func() nvml.Return { var r nvml.Return; s, r = g.lib.GpmSampleAlloc(); return r })
			if ret != nvml.SUCCESS {
				fail(ret)
				return
			}
			g.samples[i] = s
		}
	}
	cur := g.samples[1]
	sampleGet := func() nvml.Return { return d.dev.GpmSampleGet(cur) }
	if d.Parent != "" {
		sampleGet = func() nvml.Return { return d.parentDev.GpmMigSampleGet(d.GI, cur) }
	}
	if ret := safe(sampleGet); ret != nvml.SUCCESS {
		fail(ret)
		return
	}
	if !g.have {
		g.samples[0], g.samples[1] = cur, g.samples[0]
		g.have = true
		for _, n := range names {
			r.Missing = append(r.Missing, n+": "+NoEarlier)
		}
		return
	}
	get := g.get
	get.NumMetrics = uint32(len(names))
	get.Sample1, get.Sample2 = g.samples[0], cur
	for i, n := range names {
		get.Metrics[i] = nvml.GpmMetric{MetricId: uint32(gpmSources[n].id)}
	}
	ret := safe(func() nvml.Return { return g.lib.GpmMetricsGet(get) })
	g.samples[0], g.samples[1] = cur, g.samples[0]
	if ret != nvml.SUCCESS {
		fail(ret)
		return
	}
	for i, n := range names {
		gm := get.Metrics[i]
		if mr := nvml.Return(gm.NvmlReturn); mr != nvml.SUCCESS {
			miss(n, mr)
			continue
		}
		put(n, gm.Value*gpmSources[n].scale)
	}
}
