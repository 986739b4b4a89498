package record

import (
	"fmt"
	"strings"
)

// The metric catalogue: every name a sample's `metrics` object may carry
// beyond the fixed fields, with its unit in the name. The record carries
// any name (a reader keeps what it does not know), so a metric added here
// needs no schema change; agent.metrics chooses by name or by set
// (docs/records.md lists them).

// Metric describes one catalogue entry.
type Metric struct {
	// Name is the key in a sample's metrics object, unit last.
	Name string
	// Set is the agent.metrics set that chooses it with the others.
	Set string
	// Help says what it is, in a line.
	Help string
}

// Metric sets agent.metrics names besides single metrics.
const (
	// SetDefault is today's fixed fields (gpu_util ... xid_errors); always
	// sampled, it adds nothing to the metrics object.
	SetDefault  = "default"
	SetClocks   = "clocks"
	SetThrottle = "throttle"
	SetPCIe     = "pcie"
	SetNVLink   = "nvlink"
	SetGPM      = "gpm"
	SetECC      = "ecc"
	// SetAll is every set.
	SetAll = "all"
)

// Catalogue is every metric a sample's metrics object may carry, in the
// order the agent reads them.
var Catalogue = []Metric{
	{"graphics_clock_mhz", SetClocks, "graphics clock"},
	{"mem_clock_mhz", SetClocks, "memory clock"},
	{"sm_clock_max_mhz", SetClocks, "highest SM clock the GPU may run at"},
	{"power_throttle_pct", SetThrottle, "share of the time since the last sample the clocks were held down by the power limit"},
	{"thermal_throttle_pct", SetThrottle, "share of the time since the last sample the clocks were held down for temperature"},
	{"mem_temp_c", SetThrottle, "HBM temperature"},
	{"pcie_tx_bytes_per_s", SetPCIe, "PCIe bytes sent by the GPU per second"},
	{"pcie_rx_bytes_per_s", SetPCIe, "PCIe bytes received by the GPU per second"},
	{"nvlink_tx_bytes_per_s", SetNVLink, "NVLink data bytes sent per second, every link together"},
	{"nvlink_rx_bytes_per_s", SetNVLink, "NVLink data bytes received per second, every link together"},
	{"sm_active_pct", SetGPM, "share of SMs busy, averaged over the time since the last sample (GPM)"},
	{"sm_occupancy_pct", SetGPM, "warps resident per SM against the most it can hold (GPM)"},
	{"tensor_active_pct", SetGPM, "tensor cores busy, any precision (GPM)"},
	{"fp64_active_pct", SetGPM, "FP64 pipes busy (GPM)"},
	{"fp32_active_pct", SetGPM, "FP32 pipes busy (GPM)"},
	{"fp16_active_pct", SetGPM, "FP16 pipes busy (GPM)"},
	{"dram_active_pct", SetGPM, "DRAM bandwidth in use against its peak (GPM)"},
	{"ecc_sbe_volatile", SetECC, "corrected (single-bit) ECC errors since the driver loaded"},
	{"ecc_dbe_volatile", SetECC, "uncorrected (double-bit) ECC errors since the driver loaded"},
}

// MetricSets lists the set names agent.metrics takes, SetAll last.
func MetricSets() []string {
	return []string{SetDefault, SetClocks, SetThrottle, SetPCIe, SetNVLink, SetGPM, SetECC, SetAll}
}

// MetricSet is the set a catalogue metric belongs to ("" for a name not
// in the catalogue).
func MetricSet(name string) string {
	for i := range Catalogue {
		if Catalogue[i].Name == name {
			return Catalogue[i].Set
		}
	}
	return ""
}

// catalogueName returns the catalogue's own string for name, so that a
// decoded sample's keys share the catalogue's memory.
func catalogueName(name []byte) (string, bool) {
	for i := range Catalogue {
		if Catalogue[i].Name == string(name) {
			return Catalogue[i].Name, true
		}
	}
	return "", false
}

// ExpandMetrics turns agent.metrics' names (sets or catalogue names) into
// the catalogue names they choose, in catalogue order, each once. An
// unknown name is an error that lists the sets.
func ExpandMetrics(names []string) ([]string, error) {
	want := map[string]bool{}
	for _, n := range names {
		switch n {
		case SetDefault:
			continue
		case SetAll:
			for _, m := range Catalogue {
				want[m.Name] = true
			}
			continue
		}
		found := false
		for _, m := range Catalogue {
			if m.Set == n || m.Name == n {
				want[m.Name] = true
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown metric or set %q: sets are %s; single metrics are listed in docs/records.md", n, strings.Join(MetricSets(), ", "))
		}
	}
	out := []string{}
	for _, m := range Catalogue {
		if want[m.Name] {
			out = append(out, m.Name)
		}
	}
	return out, nil
}
